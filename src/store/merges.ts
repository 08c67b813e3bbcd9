import { rm } from "node:fs/promises";
import { chunkMergeStep, planChunkMerge } from "./chunk-merges.js";
import { INDEX_NAMES } from "./indexes.js";
import type { Manifest } from "./manifest.js";
import type { ParquetWriter } from "./parquet-writer.js";
import { mergeStep, planMerge } from "./runs.js";

/*
 * The background merges of settled chunks, in the order they must run: each index's runs
 * (runs.ts) first, then the chunks' dataset files (chunk-merges.ts), whose groups must lie
 * within one run of every index.
 */

type Exclusive = <T>(commit: () => Promise<T>) => Promise<T>;

/** Whether any merge is due. */
export const mergeDue = (dataDir: string, m: Manifest): boolean =>
	INDEX_NAMES.some((i) => planMerge(dataDir, m, i) !== null) || planChunkMerge(m) !== null;

/** Runs the next due merge; returns the files its commit unlisted, or null when none was due. */
export async function mergeNext(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	exclusive?: Exclusive,
): Promise<string[] | null> {
	for (const index of INDEX_NAMES) {
		const gone = await mergeStep(writer, dataDir, m, index, exclusive);
		if (gone) return gone;
	}
	return chunkMergeStep(writer, dataDir, m, exclusive);
}

/** Runs every due merge; `retire` gets each commit's unlisted files. Returns the merges done. */
export async function mergeAll(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	retire: (files: string[]) => void | Promise<void>,
	stop: () => boolean = () => false,
): Promise<number> {
	let merges = 0;
	while (!stop()) {
		const gone = await mergeNext(writer, dataDir, m);
		if (!gone) break;
		merges++;
		await retire(gone);
	}
	return merges;
}

/** Deletes files at once: for writers no API reader follows (synth), or files a crash left. */
export const deleteNow = async (files: string[]) => {
	for (const f of files) await rm(f, { force: true });
};
