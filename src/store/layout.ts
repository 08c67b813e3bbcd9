import { join } from "node:path";
import type { DatasetName } from "../extract/rows.js";

/**
 * Where files go:
 *   <data>/<chain>/<dataset>/<dataset>_<from>_<to>.parquet   (block numbers zero-padded to 12
 *   digits, so names sort in chain order and a glob reads a dataset whole)
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

export function partitionFileName(dataset: DatasetName, from: number, to: number): string {
	const pad = (n: number) => n.toString().padStart(BLOCK_DIGITS, "0");
	return `${dataset}_${pad(from)}_${pad(to)}.parquet`;
}

export function partitionPath(
	dataDir: string,
	chainId: string,
	dataset: DatasetName,
	from: number,
	to: number,
): string {
	return join(datasetDir(dataDir, chainId, dataset), partitionFileName(dataset, from, to));
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
