/**
 * The key filters of merged index runs, loaded when a key lookup first needs them and kept while
 * the store lives: apart from the rest of the store because their cache (loaded, loading, known
 * absent) is state of its own, which the placeholder expander only reads.
 */
import { INDEXES, type IndexName } from "../../store/format/indexes.js";
import type { Manifest } from "../../store/format/records.js";
import { type KeyFilter, loadKeyFilter } from "../../store/indexes/key-filter.js";
import { indexFiles } from "../../store/indexes/listing.js";
import { PLACEHOLDER } from "./placeholder-expander.js";
import type { KeySpan } from "./store.js";
import type { StoreOptions } from "./store-options.js";

export interface KeyFilters {
	/** The filters loaded, by file. */
	filters: ReadonlyMap<string, KeyFilter>;
	/** Loads the filters at `paths` not loaded yet (one that cannot be read is left out). */
	loadFilters(paths: readonly string[]): Promise<unknown>;
	/** The filters of the index files `sql` would read for `window`. */
	filtersOf(manifest: Manifest | null, sql: string, window?: readonly [number, number]): string[];
	/** The files of `index` over `window` with `key`'s rows in each (Snapshot.keyRows). */
	keyRows(
		manifest: Manifest | null,
		index: IndexName,
		key: string,
		window: readonly [number, number],
	): Promise<KeySpan[] | null>;
}

/** `options.files`: filters in a bucket are fetched into the cache and let go once read. */
export function keyFilters(dataDir: string, options: Pick<StoreOptions, "files">): KeyFilters {
	// Key filters of merged runs, by file: a run's file name is never reused, so a filter read
	// once stays right for as long as the run is listed. One that cannot be read is left out
	// (its run is then always read), never trusted.
	const filters = new Map<string, KeyFilter>();
	const loading = new Map<string, Promise<void>>();
	/** Filter files known not to exist (index files written before filters): not asked again. */
	const absent = new Set<string>();
	const loadFilters = (paths: readonly string[]) =>
		Promise.all(
			paths.map((path) => {
				if (filters.has(path) || absent.has(path)) return undefined;
				let p = loading.get(path);
				if (!p) {
					// From a bucket: fetched into the cache, read, and let go (the filter stays in memory).
					const held = options.files ? options.files.hold([path]) : Promise.resolve(() => {});
					p = held
						.then(async (release) => {
							try {
								return await loadKeyFilter(path);
							} finally {
								release();
							}
						})
						.then(
							(f) => {
								filters.set(path, f);
							},
							(err: NodeJS.ErrnoException) => {
								if (err.code === "ENOENT") absent.add(path);
							},
						);
					loading.set(path, p);
					void p.finally(() => loading.delete(path));
				}
				return p;
			}),
		);
	/** The filters of the index files `sql` would read for `window`. */
	const filtersOf = (manifest: Manifest | null, sql: string, window?: readonly [number, number]): string[] => {
		if (!manifest) return [];
		const out: string[] = [];
		for (const [, name, a, b] of sql.matchAll(PLACEHOLDER))
			if (name && name in INDEXES)
				for (const f of indexFiles(
					dataDir,
					manifest,
					name as IndexName,
					a === undefined ? window : [Number(a), Number(b)],
				))
					if (f.filter) out.push(f.filter);
		return out;
	};
	const keyRows = async (
		manifest: Manifest | null,
		index: IndexName,
		key: string,
		window: readonly [number, number],
	): Promise<KeySpan[] | null> => {
		if (!manifest) return null;
		const files = indexFiles(dataDir, manifest, index, window);
		if (files.some((f) => f.filter === undefined)) return null;
		await loadFilters(files.map((f) => f.filter as string));
		const k = key.toLowerCase();
		const out: KeySpan[] = [];
		for (const f of files) {
			const filter = filters.get(f.filter as string);
			// A file without a filter, or whose filter keeps no busy list, may hold many of its rows;
			// one that does not count its busy keys gives nothing to size by.
			if (filter === undefined) return null;
			if (!filter.has(k)) out.push({ from: f.from, to: f.to, rows: 0 });
			else if (filter.busy === undefined) return null;
			else if (!filter.busy.has(k)) out.push({ from: f.from, to: f.to, rows: "few" });
			else {
				const busy = filter.busyRows?.get(k);
				if (busy === undefined) return null;
				out.push({ from: f.from, to: f.to, rows: busy.rows, marks: busy.marks });
			}
		}
		return out;
	};
	return { filters, loadFilters, filtersOf, keyRows };
}

/** Whether a key's files (keyRows) all rule it out or hold few of its rows: then one statement reads them all. */
export function isQuiet(spans: readonly KeySpan[] | null): boolean {
	return spans?.every((s) => s.rows === 0 || s.rows === "few") === true;
}
