import type { IndexName } from "./indexes.js";
import type { Manifest, RunEntry } from "./records.js";

/*
 * Reading the manifest's merged runs (indexes/runs.ts writes them): which run covers a chunk,
 * and which chunks count as final. Here, in the format, because the Delta Lake export and the
 * readers need them as much as the merges do.
 */

/** In a folder no follower keeps (no `final_through`), chunks this far below the tip count as final. */
export const SETTLE_DEPTH = 64;

/** The runs of `index`, in block order. */
export const runsOf = (m: Manifest, index: IndexName): RunEntry[] =>
	(m.runs ?? []).filter((r) => r.index === index).sort((a, b) => a.from - b.from);

/** Values per index, kept for one state of a manifest (`key`, of its generation and sizes). */
export type StateCache<V> = WeakMap<Manifest, { key: string; by: Map<IndexName, V> }>;
/** `compute()` for `index`, once per state `key` of manifest `m`. */
export function perState<V>(cache: StateCache<V>, m: Manifest, key: string, index: IndexName, compute: () => V): V {
	let cached = cache.get(m);
	if (cached?.key !== key) {
		cached = { key, by: new Map() };
		cache.set(m, cached);
	}
	let value = cached.by.get(index);
	if (value === undefined) {
		value = compute();
		cached.by.set(index, value);
	}
	return value;
}

/**
 * The run of `index` that covers chunk `c`, if any. Asked for every chunk of a hash lookup and of
 * a listing's windows, so the runs are sorted once per manifest state (keyed as layoutOf's) and
 * searched by halves: at 23,000 chunks a scan of every run per chunk would cost more than the query.
 */
const sortedRuns: StateCache<RunEntry[]> = new WeakMap();
export function runCovering(m: Manifest, index: IndexName, c: { from: number; to: number }): RunEntry | undefined {
	const key = `${m.generation ?? 0}\0${m.runs?.length ?? 0}`;
	const runs = perState(sortedRuns, m, key, index, () => runsOf(m, index));
	// The last run starting at or before the chunk (runs of one index never overlap).
	let lo = 0;
	let hi = runs.length - 1;
	while (lo < hi) {
		const mid = (lo + hi + 1) >> 1;
		if ((runs[mid] as RunEntry).from <= c.from) lo = mid;
		else hi = mid - 1;
	}
	const run = runs[lo];
	return run && run.from <= c.from && c.to <= run.to ? run : undefined;
}
