import { crashPoint } from "../../util/crash-point.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { INDEX_NAMES, indexesFor } from "../format/indexes.js";
import { chunkFiles, nextGeneration } from "../format/manifest.js";
import type { ChunkEntry, Manifest } from "../format/records.js";
import { runCovering } from "../format/run-lookup.js";
import { FAN_IN, levelOf, partitionsOf, settledChunks } from "../indexes/runs.js";
import { deriveIndexes, mergeChunkDatasets, replaceChunks } from "./chunk-store.js";

/**
 * Dataset files sized by rows, not by blocks: settled chunks are merged, FAN_IN adjacent chunks
 * of one level at a time (as the index runs, runs.ts), into chunks spanning 4, 16, 64, ...
 * partitions, until a chunk holds `compact_rows` rows (all datasets together). Early mainnet's
 * nearly empty 1,000-block partitions become a few large files instead of tens of thousands of
 * tiny ones, which every reader pays for (the API's dataset scans, `npm run sql`, other engines);
 * a full partition of late mainnet is left as it is written.
 *
 * A merged chunk is an ordinary chunk (one file per dataset, same names and columns), so every
 * reader works unchanged. It never straddles an index run: for each index, the chunks merged lie
 * in one run (which keeps holding their index rows, as rows do not point at files) or in none
 * (then the merged chunk gets its own index files). Index merges run first (merges.ts), so in
 * the steady state the runs of a level exist before the chunk merge of that level.
 */

/** Rows (all datasets) from which a chunk is left alone: about 600 MB of Parquet (75 B a row on
 * the synthetic M chain, BENCHMARKS.md), its largest dataset file about 200 MB. */
export const COMPACT_ROWS = 8_000_000;

const rowsOf = (c: ChunkEntry) => Object.values(c.rows).reduce((n, r) => n + (r ?? 0), 0);

/** The next FAN_IN adjacent chunks of one level to merge, or null when none is due. */
export function planChunkMerge(m: Manifest): ChunkEntry[] | null {
	const target = m.compact_rows ?? COMPACT_ROWS;
	const settled = settledChunks(m);
	group: for (let i = 0; i + FAN_IN <= settled.length; i++) {
		const g = settled.slice(i, i + FAN_IN);
		const first = g[0] as ChunkEntry;
		const lv = levelOf(partitionsOf(m, first));
		const key = (c: ChunkEntry) => `${c.traces}:${c.datasets.join(",")}`;
		for (const [j, c] of g.entries()) {
			if (rowsOf(c) >= target || levelOf(partitionsOf(m, c)) !== lv || key(c) !== key(first)) continue group;
			if (j > 0 && (g[j - 1] as ChunkEntry).to + 1 !== c.from) continue group;
		}
		for (const index of INDEX_NAMES) {
			const run = runCovering(m, index, first);
			if (!g.every((c) => runCovering(m, index, c) === run)) continue group;
		}
		return g;
	}
	return null;
}

/**
 * Merges the next due group (if any) into one chunk and swaps it in with one manifest save.
 * Returns the files that left the manifest (for the caller to delete once no reader needs them),
 * or null if no merge was due.
 */
export async function chunkMergeStep(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	/** Runs the commit (manifest change and save) alone, when other writers share `m` (the follower). */
	exclusive: <T>(commit: () => Promise<T>) => Promise<T> = (commit) => commit(),
): Promise<string[] | null> {
	const group = planChunkMerge(m);
	if (!group) return null;
	const first = group[0] as ChunkEntry;
	const covering = new Map(INDEX_NAMES.map((i) => [i, runCovering(m, i, first)]));
	const merged = await mergeChunkDatasets(writer, dataDir, m.chain, group, nextGeneration(m));
	// Index rows a run holds stay there; the others get the merged chunk's own files.
	const own = indexesFor(merged.datasets).filter((i) => covering.get(i) === undefined);
	merged.indexes = [];
	await deriveIndexes(writer, dataDir, m.chain, merged, own);
	crashPoint("chunks.merged");
	return exclusive(async () => {
		// A repair may have unlisted a damaged chunk or run meanwhile: then nothing is committed.
		const intact =
			group.every((c) => m.chunks.includes(c)) &&
			INDEX_NAMES.every((i) => {
				const run = covering.get(i);
				return run === undefined ? runCovering(m, i, first) === undefined : m.runs?.includes(run);
			});
		if (!intact) return chunkFiles(dataDir, m.chain, merged);
		const gone = await replaceChunks(dataDir, m, group, [merged]);
		crashPoint("chunks.committed");
		return gone;
	});
}
