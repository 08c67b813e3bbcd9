import type { IndexName } from "./indexes.js";
import { filterPath } from "./key-filter.js";
import { partitionPath } from "./layout.js";
import { type ChunkEntry, chunkFiles, ghostFiles, type Manifest } from "./manifest.js";
import type { RunEntry } from "./runs.js";

/*
 * Which files hold what, now that an index's rows live in merged runs (runs.ts) and in the own
 * index files of chunks no run covers yet.
 */

/** The runs of `index`, in block order. */
export const runsOf = (m: Manifest, index: IndexName): RunEntry[] =>
	(m.runs ?? []).filter((r) => r.index === index).sort((a, b) => a.from - b.from);

/** The run of `index` that covers chunk `c`, if any. */
export const runCovering = (m: Manifest, index: IndexName, c: { from: number; to: number }): RunEntry | undefined =>
	(m.runs ?? []).find((r) => r.index === index && r.from <= c.from && c.to <= r.to);

/** Whether a chunk's `index` rows can be read (its own file, or a run). */
export const isIndexed = (m: Manifest, index: IndexName, c: ChunkEntry): boolean =>
	c.indexes?.includes(index) === true || runCovering(m, index, c) !== undefined;

/** A file holding rows of an index, with its key filter when it has one (runs do). */
export interface IndexFile {
	path: string;
	filter?: string;
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
): IndexFile[] {
	const overlaps = (r: { from: number; to: number }) => !window || (r.to >= window[0] && r.from <= window[1]);
	const runs = runsOf(m, index);
	const out: (IndexFile & { from: number })[] = runs.filter(overlaps).map((r) => {
		const path = partitionPath(dataDir, m.chain, index, r);
		return { path, filter: filterPath(path), from: r.from };
	});
	for (const c of m.chunks) {
		if (!c.indexes?.includes(index) || !overlaps(c)) continue;
		if (runs.some((r) => r.from <= c.from && c.to <= r.to)) continue;
		// Its filter, if written (chunks before filters have none: then the file is always read).
		const path = partitionPath(dataDir, m.chain, index, c);
		out.push({ path, filter: filterPath(path), from: c.from });
	}
	return out.sort((a, b) => a.from - b.from).map(({ path, filter }) => (filter ? { path, filter } : { path }));
}

/** Every file of every run, filters included: listed, so never removed as leftovers. */
export const runFiles = (dataDir: string, m: Manifest): string[] =>
	(m.runs ?? []).flatMap((r) => {
		const path = partitionPath(dataDir, m.chain, r.index, r);
		return [path, filterPath(path)];
	});

/** Every file the manifest lists (datasets, indexes, runs and their filters, ghosts): never deleted. */
export function listedPaths(dataDir: string, m: Manifest): Set<string> {
	return new Set([
		...m.chunks.flatMap((c) => chunkFiles(dataDir, m.chain, c)),
		...runFiles(dataDir, m),
		...ghostFiles(dataDir, m),
	]);
}
