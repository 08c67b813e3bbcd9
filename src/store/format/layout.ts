import { join } from "node:path";
import type { DatasetName } from "../../extract/rows.js";

/**
 * Where files go:
 *   <data>/<chain>/<dataset>/<dataset>_<from>_<to>_g<gen>.parquet   (block numbers zero-padded
 *   to 12 digits, so names sort in chain order; gen = the manifest generation that first lists
 *   the file. Generations only grow, so a name is never used twice: a range rewritten after a
 *   reorg, a compaction or a reorg back to a block already seen gets a new name, and a file
 *   retired earlier can be deleted without touching a live one. Folders written before
 *   generations existed keep their names, `..._<tag>.parquet` with tag = 8 hex digits of the
 *   range's last block hash.)
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

/** The identity of a stored range: its blocks, the hash of its last block, and the manifest
 * generation that first listed its files (absent in folders written before generations). */
export interface RangeId {
	from: number;
	to: number;
	last_hash: string;
	gen?: number;
}

export function partitionFileName(dataset: string, r: RangeId): string {
	const pad = (n: number) => n.toString().padStart(BLOCK_DIGITS, "0");
	const tag = r.gen != null ? `g${r.gen}` : r.last_hash.slice(2, 10);
	return `${dataset}_${pad(r.from)}_${pad(r.to)}_${tag}.parquet`;
}

export function partitionPath(dataDir: string, chainId: string, dataset: string, r: RangeId): string {
	return join(dataDir, chainId, dataset, partitionFileName(dataset, r));
}

export function manifestPath(dataDir: string, chainId: string): string {
	return join(dataDir, chainId, "_manifest.json");
}

/** The chain's writer's health, for API processes that do not write (follow/status-file.ts). */
export function statusPath(dataDir: string, chainId: string): string {
	return join(dataDir, chainId, "_status.json");
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
