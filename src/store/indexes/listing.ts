import type { IndexName } from "../format/indexes.js";
import { partPaths } from "../format/key-parts.js";
import { partitionPath } from "../format/layout.js";
import { chunkFiles, ghostFiles, metadataFiles, rankFiles } from "../format/manifest.js";
import { type ChunkEntry, type Manifest, METADATA_TABLE_NAMES, type RunEntry } from "../format/records.js";
import { perState, runCovering, runsOf, type StateCache } from "../format/run-lookup.js";
import { filterPath } from "./key-filter.js";
import { lookupDbOf, lookupDbPath } from "./lookup-db.js";

/*
 * Which files hold what, now that an index's rows live in merged runs (runs.ts) and in the own
 * index files of chunks no run covers yet.
 */

/** Whether a chunk's `index` rows can be read (its own file, or a run). */
export const isIndexed = (m: Manifest, index: IndexName, c: ChunkEntry): boolean =>
	c.indexes?.includes(index) === true || runCovering(m, index, c) !== undefined;

/**
 * A file holding rows of an index, with its key filter when it has one, in `parts` key-range
 * files (format/key-parts.ts: `path` is part 0).
 */
export interface IndexFile {
	path: string;
	filter?: string;
	parts: number;
	/** Bounds of busy keys' own parts among them (absent: none). */
	cuts?: readonly string[];
	/** Its rows in a lookup database too (lookup-db.ts): a run's, where written. */
	db?: string;
}

/**
 * The files that hold `index`'s rows for the chunks overlapping `window` (all, without one):
 * runs, then the own files of chunks no run covers, in block order.
 */
export function indexFiles(
	dataDir: string,
	m: Manifest,
	index: IndexName,
	window?: readonly [number, number],
): PlacedIndexFile[] {
	const all = layoutOf(dataDir, m, index);
	if (!window) return all;
	return all.filter((f) => f.to >= window[0] && f.from <= window[1]);
}

/** An index file with the blocks it covers. */
export type PlacedIndexFile = IndexFile & { from: number; to: number };
type Placed = PlacedIndexFile;
/**
 * An index's files in block order, once per manifest state: every API query asks for them, and
 * at mainnet's 23,000 chunks walking the chunk list per query would cost more than the query.
 * Keyed by the manifest object and its generation (the store's manifests are never changed;
 * a writer's is, and saves bump the generation).
 */
const layouts: StateCache<Placed[]> = new WeakMap();
function layoutOf(dataDir: string, m: Manifest, index: IndexName): Placed[] {
	const key = `${dataDir}\0${m.generation ?? 0}\0${m.chunks.length}\0${m.runs?.length ?? 0}`;
	return perState(layouts, m, key, index, () => {
		const runs = runsOf(m, index);
		const files: Placed[] = runs.map((r) => {
			const path = partitionPath(dataDir, m.chain, index, r);
			const db = r.lookup_db ? { db: lookupDbPath(path) } : {};
			return { path, filter: filterPath(path), from: r.from, to: r.to, parts: r.parts ?? 1, cuts: r.cuts, ...db };
		});
		// Chunks in block order against runs in block order: one pass finds those no run covers.
		let i = 0;
		for (const c of [...m.chunks].sort((a, b) => a.from - b.from)) {
			if (!c.indexes?.includes(index)) continue;
			while (i < runs.length && (runs[i] as RunEntry).to < c.from) i++;
			const run = runs[i];
			if (run && run.from <= c.from && c.to <= run.to) continue;
			// Its filter, if written (index files before filters have none: then always read).
			const path = partitionPath(dataDir, m.chain, index, c);
			files.push({
				path,
				filter: filterPath(path),
				from: c.from,
				to: c.to,
				parts: c.parts?.[index] ?? 1,
				cuts: c.cuts?.[index],
			});
		}
		files.sort((a, b) => a.from - b.from);
		return files;
	});
}

/** Every file of every run, filters and lookup databases included: listed, so never removed as leftovers. */
export const runFiles = (dataDir: string, m: Manifest): string[] =>
	(m.runs ?? []).flatMap((r) => {
		const path = partitionPath(dataDir, m.chain, r.index, r);
		return [...partPaths(path, r.parts), filterPath(path), ...lookupDbOf(r, path)];
	});

/** Every file the manifest lists (datasets, indexes, runs and their filters, ghosts, token metadata, holder ranks): never deleted. */
export function listedPaths(dataDir: string, m: Manifest): Set<string> {
	return new Set([
		...rankFiles(dataDir, m),
		...m.chunks.flatMap((c) => chunkFiles(dataDir, m.chain, c)),
		...runFiles(dataDir, m),
		...ghostFiles(dataDir, m),
		...METADATA_TABLE_NAMES.flatMap((t) => metadataFiles(dataDir, m, t)),
	]);
}
