import { join } from "node:path";
import type { DatasetName } from "../extract/rows.js";

/**
 * Where files go:
 *   <data>/<chain>/<dataset>/<dataset>_<from>_<to>_<tag>.parquet   (block numbers zero-padded to
 *   12 digits, so names sort in chain order; tag = 8 hex digits of the range's last block hash,
 *   so a range rewritten after a reorg gets a new name and never overwrites a file a reader
 *   may have open)
 *   <data>/<chain>/_manifest.json                             (the chunks written; see manifest.ts)
 *   <data>/<chain>/_staging/                                  (scratch for the writer; never read)
 */
export const BLOCK_DIGITS = 12;

export function chainDir(dataDir: string, chainId: string): string {
	return join(dataDir, chainId);
}

export function datasetDir(dataDir: string, chainId: string, dataset: DatasetName): string {
	return join(dataDir, chainId, dataset);
}

/** The identity of a stored range: its blocks, and the hash of its last block. */
export interface RangeId {
	from: number;
	to: number;
	last_hash: string;
}

export function partitionFileName(dataset: string, r: RangeId): string {
	const pad = (n: number) => n.toString().padStart(BLOCK_DIGITS, "0");
	return `${dataset}_${pad(r.from)}_${pad(r.to)}_${r.last_hash.slice(2, 10)}.parquet`;
}

export function partitionPath(dataDir: string, chainId: string, dataset: string, r: RangeId): string {
	return join(dataDir, chainId, dataset, partitionFileName(dataset, r));
}

export function manifestPath(dataDir: string, chainId: string): string {
	return join(dataDir, chainId, "_manifest.json");
}

export function stagingDir(dataDir: string, chainId: string): string {
	return join(dataDir, chainId, "_staging");
}

/** Splits [from, to] at multiples of `size`, so chunk boundaries never depend on where a run began. */
export function alignedChunks(from: number, to: number, size: number): [number, number][] {
	const out: [number, number][] = [];
	for (let start = from; start <= to; ) {
		const end = Math.min(to, (Math.floor(start / size) + 1) * size - 1);
		out.push([start, end]);
		start = end + 1;
	}
	return out;
}
