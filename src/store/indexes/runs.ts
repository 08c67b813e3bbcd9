import { crashPoint } from "../../util/crash-point.js";
import { saveManifest } from "../delta/save-manifest.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { INDEXES, type IndexDef, type IndexName } from "../format/indexes.js";
import { partPaths } from "../format/key-parts.js";
import { partitionPath } from "../format/layout.js";
import { nextGeneration } from "../format/manifest.js";
import { type ChunkEntry, type Manifest, type RunEntry, setChunkParts, setRunParts } from "../format/records.js";
import { runsOf, SETTLE_DEPTH } from "../format/run-lookup.js";
import { filterPath, writeKeyFilter } from "./key-filter.js";
import { lookupDbOf, writeRunLookupDb } from "./lookup-db.js";

/*
 * Merged index runs: the per-chunk index files of settled chunks are merged, in the background,
 * into runs that cover FAN_IN^k chunks (size-tiered, as an LSM tree's universal compaction or
 * Erigon's history files merged in growing steps), each with a key filter (key-filter.ts) in a
 * file beside it. A whole-history lookup then opens O(log n) files per index, and of those only
 * the ones whose filter admits the wallet or hash: a quiet wallet or a missing hash reads almost
 * nothing, at 100 chunks as at 20,000.
 *
 * Only settled chunks are merged: final (at or below `final_through`, or more than
 * SETTLE_DEPTH blocks below the tip in a folder no follower keeps) and a whole partition, so no
 * reorg (refused at or below the final block) and no compaction (which only merges chunks of an
 * incomplete or split partition) ever replaces a chunk a run covers. A run covers the block
 * range of the adjacent chunks it merged; readers take an index's rows from its runs, and from a
 * chunk's own index file only where no run covers the chunk.
 */

/** Runs merged at once: files per index stay under FAN_IN × levels; each row is rewritten once per level. */
export const FAN_IN = 4;

/** A unit's level: floor(log_FAN_IN(partitions it spans)). */
export const levelOf = (partitions: number) => Math.floor(Math.log(partitions) / Math.log(FAN_IN) + 1e-9);
const level = levelOf;

/** Partitions a chunk spans: 1, or FAN_IN^k once merged (chunk-merges.ts); a partial first one counts whole. */
export const partitionsOf = (m: Manifest, c: { from: number; to: number }): number => {
	const size = m.partition_size ?? 1;
	return Math.floor(c.to / size) - Math.floor(c.from / size) + 1;
};

/** The chunks that will never be replaced, in block order (see the module comment). */
export function settledChunks(m: Manifest): ChunkEntry[] {
	const size = m.partition_size;
	if (!size) return [];
	const sorted = [...m.chunks].sort((a, b) => a.from - b.from);
	const tip = sorted.at(-1)?.to ?? -1;
	const finalThrough = m.final_through ?? tip - SETTLE_DEPTH;
	const first = sorted[0]?.from ?? 0;
	// Whole partitions (one, or several merged: chunk-merges.ts), the first one possibly partial.
	return sorted.filter(
		(c) => c.to <= finalThrough && (c.to + 1) % size === 0 && (c.from % size === 0 || c.from === first),
	);
}

/**
 * The other chunks, in block order: the head's, and any a reorg or a compaction may still
 * replace (their balance deltas come last in the background merges: merges.ts headStep).
 */
export function unsettledChunks(m: Manifest): ChunkEntry[] {
	const settled = new Set(settledChunks(m));
	return [...m.chunks].sort((a, b) => a.from - b.from).filter((c) => !settled.has(c));
}

interface Unit {
	from: number;
	to: number;
	last_hash: string;
	chunks: number;
	path: string;
	/** Its files: every key-range part of `path`. */
	parts: string[];
	run?: RunEntry;
	chunk?: ChunkEntry;
}

/** What `index`'s settled history is made of, in block order: its runs and its chunks' own files. */
function settledUnits(dataDir: string, m: Manifest, index: IndexName): Unit[] {
	const units: Unit[] = [];
	const runs = runsOf(m, index);
	for (const c of settledChunks(m)) {
		const run = runs.find((r) => r.from <= c.from && c.to <= r.to);
		if (run) {
			if (units.at(-1)?.run !== run) {
				const path = partitionPath(dataDir, m.chain, index, run);
				units.push({ ...run, path, parts: partPaths(path, run.parts), run, chunks: run.chunks });
			}
		} else if (c.indexes?.includes(index)) {
			const path = partitionPath(dataDir, m.chain, index, c);
			const parts = partPaths(path, c.parts?.[index]);
			units.push({ from: c.from, to: c.to, last_hash: c.last_hash, chunks: partitionsOf(m, c), path, parts, chunk: c });
		} else {
			// No index rows for this chunk (written before the index existed): nothing merges across it.
			units.push({ from: c.from, to: c.to, last_hash: c.last_hash, chunks: Number.NaN, path: "", parts: [] });
		}
	}
	return units;
}

/** Whether `units` can merge into one run: each has index rows, and they follow one another. */
const mergeable = (units: readonly Unit[]) =>
	units.every((u, j) => Number.isFinite(u.chunks) && (j === 0 || (units[j - 1] as Unit).to + 1 === u.from));

/** The next FAN_IN adjacent units of one level to merge for `index`, or null when none is due. */
export function planMerge(dataDir: string, m: Manifest, index: IndexName): Unit[] | null {
	const units = settledUnits(dataDir, m, index);
	for (let i = 0; i + FAN_IN <= units.length; i++) {
		const group = units.slice(i, i + FAN_IN);
		const lv = level((group[0] as Unit).chunks);
		if (!mergeable(group) || !group.every((u) => level(u.chunks) === lv)) continue;
		return group;
	}
	return null;
}

/**
 * Every settled unit of `index` at once, when there are two or more (`npm run reindex --
 * --whole-history`): the history a backfill wrote becomes one run, so a quiet wallet's page reads
 * one file of it instead of one per level (up to FAN_IN - 1 a level are left unmerged by
 * planMerge). Not a background policy: each new settled chunk would rewrite the whole history.
 * The run's size need not be a power of FAN_IN; planMerge later treats it as a unit of its level.
 */
export function planWholeMerge(dataDir: string, m: Manifest, index: IndexName): Unit[] | null {
	const units = settledUnits(dataDir, m, index);
	return units.length >= 2 && mergeable(units) ? units : null;
}

/**
 * Merges the next due group of `index` (if any; `plan`) into one run with its filter, and commits it in
 * one manifest save: the run listed, the merged runs and chunk files unlisted. Returns the files
 * that left the manifest (for the caller to delete once no reader needs them), or null if no
 * merge was due.
 */
export async function mergeStep(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	index: IndexName,
	/** Runs the commit (manifest change and save) alone, when other writers share `m` (the follower). */
	exclusive: <T>(commit: () => Promise<T>) => Promise<T> = (commit) => commit(),
	/** Which units merge: the next due group (planMerge), or the whole settled history (planWholeMerge). */
	plan: typeof planMerge = planMerge,
): Promise<string[] | null> {
	const group = plan(dataDir, m, index);
	if (!group) return null;
	const first = group[0] as Unit;
	const last = group.at(-1) as Unit;
	const run: RunEntry = {
		index,
		from: first.from,
		to: last.to,
		last_hash: last.last_hash,
		gen: nextGeneration(m),
		chunks: group.reduce((n, u) => n + u.chunks, 0),
		rows: 0,
		keys: 0,
	};
	const path = partitionPath(dataDir, m.chain, index, run);
	const inputs = group.flatMap((u) => u.parts);
	const written = await writer.mergeIndex(index, inputs, path);
	run.rows = written.rows;
	setRunParts(run, written);
	crashPoint("runs.merged");
	run.keys = await writeKeyFilter(writer, path, index, written.parts);
	crashPoint("runs.filter-written");
	if ((INDEXES[index] as IndexDef).lookupDb) {
		await writeRunLookupDb(writer, dataDir, m, run);
		run.lookup_db = true;
		crashPoint("runs.lookup-db-written");
	}
	const merged = new Set(group.map((u) => u.run).filter((r) => r !== undefined));
	return exclusive(async () => {
		// Settled chunks are never replaced and only merges change runs, but a repair may have
		// unlisted a damaged chunk meanwhile: then this run is dropped, never committed.
		const intact = group.every((u) =>
			u.run ? m.runs?.includes(u.run) : u.chunk && m.chunks.includes(u.chunk) && u.chunk.indexes?.includes(index),
		);
		if (!intact) return [...partPaths(path, written.parts), filterPath(path), ...lookupDbOf(run, path)];
		m.runs = [...(m.runs ?? []).filter((r) => !merged.has(r)), run];
		for (const u of group) {
			if (!u.chunk) continue;
			u.chunk.indexes = u.chunk.indexes?.filter((i) => i !== index);
			setChunkParts(u.chunk, index, { parts: 1, cuts: [] });
		}
		await saveManifest(dataDir, m);
		crashPoint("runs.committed");
		return group.flatMap((u) => [...u.parts, filterPath(u.path), ...(u.run ? lookupDbOf(u.run, u.path) : [])]);
	});
}
