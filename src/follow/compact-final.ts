import { deriveIndexes, mergeChunkDatasets, replaceChunks } from "../store/chunks/chunk-store.js";
import { missingRanges, nextGeneration } from "../store/format/manifest.js";
import type { ChunkEntry } from "../store/format/records.js";
import { crashPoint } from "../util/crash-point.js";
import { type FollowContext, type FollowEvent, type FollowState, markFinal, sortedChunks } from "./follow-context.js";
import { DEFAULT_COMPACT_FAN_IN } from "./follower-options.js";

/*
 * A follower step's compaction: final head chunks merged into aligned windows, then whole
 * partitions, so one-block files do not pile up.
 */

/**
 * Merges final chunks so head files do not pile up: a partition's chunks into one file once
 * the whole partition is stored and final, and before that, aligned windows of the partition
 * (`compactFanIn` blocks, then its square, ...: 32 by default; 4, 16, 64, 256 with 4, in a
 * partition of 1000) once a window is final and held by several chunks, the largest first. Windows
 * are aligned to block numbers, not to the chunks in them, so the chunks a lagging follower
 * appends several blocks at a time (a range of final blocks, then one-block chunks) merge like
 * the others: a chunk across a window's edge only waits for the next larger window. A partition's
 * tail stays under `compactFanIn` chunks per window size, and a block is rewritten once per
 * window size. (Runs of 32 one-block chunks, before: one chunk of several blocks, which a
 * follower more than the finality depth behind appends, broke every run after it until the
 * partition was complete; the demo's head files piled up so.)
 */
export async function compactFinal(ctx: FollowContext, s: FollowState, head: number): Promise<FollowEvent | null> {
	const { opts, chain, dataDir, finality, partitionSize, retire } = ctx;
	const lastFinal = head - finality;
	const groups = new Map<number, ChunkEntry[]>();
	for (const c of sortedChunks(s.manifest)) {
		if (c.to > lastFinal) continue;
		const p = Math.floor(c.from / partitionSize);
		if (Math.floor(c.to / partitionSize) !== p) continue;
		groups.set(p, [...(groups.get(p) ?? []), c]);
	}
	const windows: number[] = [];
	const fanIn = Math.max(2, opts.compactFanIn ?? DEFAULT_COMPACT_FAN_IN);
	for (let w = fanIn; w < partitionSize; w *= fanIn) windows.unshift(w);
	for (const [p, group] of groups) {
		const start = p * partitionSize;
		const end = start + partitionSize - 1;
		/** The chunks holding exactly [a, b], every block, with one trace format; null if not so. */
		const held = (a: number, b: number): ChunkEntry[] | null => {
			if (group.some((c) => (c.from < a && c.to >= a) || (c.from <= b && c.to > b))) return null;
			const inside = group.filter((c) => c.from >= a && c.to <= b);
			if (inside.length < 2 || new Set(inside.map((c) => c.traces)).size !== 1) return null;
			return missingRanges({ ...s.manifest, chunks: inside }, a, b).length === 0 ? inside : null;
		};
		let run = held(start, end);
		for (const size of run ? [] : windows) {
			for (let a = start; !run && a + size - 1 <= Math.min(end, lastFinal); a += size) run = held(a, a + size - 1);
			if (run) break;
		}
		if (!run) continue;
		const merged = await mergeChunkDatasets(s.writer, dataDir, chain.id, run, nextGeneration(s.manifest), () =>
			crashPoint("follow.compact.dataset-merged"),
		);
		await deriveIndexes(s.writer, dataDir, chain.id, merged);
		crashPoint("follow.compact.files-written");
		markFinal(s.manifest, merged.to);
		const replaced = await replaceChunks(dataDir, s.manifest, run, [merged]);
		crashPoint("follow.compact.swapped");
		retire(replaced);
		return { type: "compact", from: merged.from, to: merged.to, files: run.length };
	}
	return null;
}
