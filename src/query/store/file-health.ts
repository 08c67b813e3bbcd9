/**
 * Which of a chain's listed files are whole and which are missing or damaged: checked in the
 * background when a manifest first lists them, again when a query on them fails, and by size now
 * and then for /readyz. Apart from the rest of the store because requests only look its answers
 * up (the runner refuses a known-damaged file at once), while the checks run on their own clock.
 */
import { stat } from "node:fs/promises";
import { relative } from "node:path";
import { isFileError, parquetShape } from "../../store/format/parquet-shape.js";
import type { Manifest } from "../../store/format/records.js";
import { listedPaths } from "../../store/indexes/listing.js";
import { DamagedDataError, type DamagedFile, dataDamagedMessage } from "../damaged-data-error.js";
import type { StoreOptions } from "./store-options.js";

type Health = {
	whole: Map<string, number>;
	damaged: Map<string, string>;
	recheckedAt: number;
	rechecking?: Promise<void>;
};

export interface FileHealth {
	/** The chain's files found damaged so far (by path, with what is wrong), if any were checked. */
	damagedOf(chain: string): ReadonlyMap<string, string> | undefined;
	/** Checks the files `manifest` lists that were not found whole yet, once per manifest. */
	sweep(chain: string, manifest: Manifest): Promise<void>;
	/** The damaged files among `paths`, with their block ranges (from their names, layout.ts), as the API may show them. */
	damagedFiles(chain: string, paths: Iterable<string>): DamagedFile[];
	/** The DATA_DAMAGED error naming `files`. */
	damagedError(chain: string, files: DamagedFile[]): DamagedDataError;
	/** Why a query on `files` failed, if a file is missing or damaged (see below), else null. */
	damageBehind(chain: string, files: string[], err: unknown): Promise<DamagedDataError | null>;
	/** The listed files of `manifest` found missing or damaged (Store.damage). */
	damage(chain: string, manifest: Manifest): Promise<DamagedFile[]>;
}

/** `options.files`: files in a bucket are not swept; `options.damageRecheckMs`: see StoreOptions. */
export function fileHealth(dataDir: string, options: Pick<StoreOptions, "files" | "damageRecheckMs">): FileHealth {
	// Listed files found whole (with their size), and found missing or damaged (with what is
	// wrong), by chain and path. A file is checked when a manifest first lists it (parquetShape: no
	// DuckDB, a few bytes read; names are never reused, so once is enough), again when a query
	// reading it fails, and by size now and then for /readyz (damage()). Requests only look up
	// the damaged ones.
	const recheckMs = options.damageRecheckMs ?? 60_000;
	const health = new Map<string, Health>();
	const healthOf = (chain: string) => {
		let h = health.get(chain);
		if (!h) {
			h = { whole: new Map(), damaged: new Map(), recheckedAt: Date.now() };
			health.set(chain, h);
		}
		return h;
	};
	/** Checks `paths` (a few at a time, leaving the thread pool to others); `bySize`: a file found
	 * whole before is read again only if its size changed. */
	const checkPaths = async (h: Health, paths: readonly string[], bySize = false) => {
		for (let i = 0; i < paths.length; i += 16) {
			await Promise.all(
				paths.slice(i, i + 16).map(async (p) => {
					const size = await stat(p).then(
						(st) => st.size,
						() => -1,
					);
					if (bySize && size === h.whole.get(p)) return;
					const problem = size < 0 ? "missing" : await parquetShape(p);
					if (problem) {
						h.whole.delete(p);
						h.damaged.set(p, problem);
					} else {
						h.damaged.delete(p);
						h.whole.set(p, size);
					}
				}),
			);
		}
	};
	const sweeps = new WeakMap<Manifest, Promise<void>>();
	const sweep = (chain: string, manifest: Manifest): Promise<void> => {
		let p = sweeps.get(manifest);
		if (!p && options.files) p = Promise.resolve();
		if (!p) {
			const h = healthOf(chain);
			const listed = listedPaths(dataDir, manifest);
			// Files no longer listed are forgotten, so the sets do not grow with a follower's chain.
			for (const f of h.whole.keys()) if (!listed.has(f)) h.whole.delete(f);
			for (const f of h.damaged.keys()) if (!listed.has(f)) h.damaged.delete(f);
			p = checkPaths(
				h,
				[...listed].filter((f) => f.endsWith(".parquet") && !h.whole.has(f)),
			).catch(() => {});
			sweeps.set(manifest, p);
		}
		return p;
	};
	/** The damaged files among `paths`, with their block ranges (from their names, layout.ts), as the API may show them. */
	const damagedFiles = (chain: string, paths: Iterable<string>): DamagedFile[] => {
		const damaged = healthOf(chain).damaged;
		const out: DamagedFile[] = [];
		for (const f of new Set(paths)) {
			const problem = damaged.get(f);
			if (problem === undefined) continue;
			const range = /_(\d+)_(\d+)_[^_]+\.parquet$/.exec(f);
			out.push({ file: relative(dataDir, f), from: Number(range?.[1]), to: Number(range?.[2]), problem });
		}
		return out.sort((a, b) => a.from - b.from || a.file.localeCompare(b.file));
	};
	const damagedError = (chain: string, files: DamagedFile[]) =>
		new DamagedDataError("DATA_DAMAGED", dataDamagedMessage(chain, files), files);
	/**
	 * A query failed: if it was on a listed file that is missing or damaged (DuckDB names it, or
	 * says it found no file or no Parquet footer), the error saying which blocks and how to repair
	 * them, else null. A file DuckDB names that still looks whole has a damaged page.
	 */
	const damageBehind = async (chain: string, files: string[], err: unknown) => {
		// The first line only: the rest quotes the statement, which names every file it reads.
		const first = String((err as Error)?.message ?? "").split("\n")[0] ?? "";
		const named = /^(IO|Invalid Input) Error/.test(first) ? files.filter((f) => first.includes(f)) : [];
		if (named.length === 0 && !isFileError(first)) return null;
		const h = healthOf(chain);
		await checkPaths(h, named.length > 0 ? named : files);
		for (const f of named) {
			h.whole.delete(f);
			if (!h.damaged.has(f)) h.damaged.set(f, "unreadable: a part of it is damaged");
		}
		const bad = damagedFiles(chain, files);
		return bad.length > 0 ? damagedError(chain, bad) : null;
	};
	return {
		damagedOf: (chain) => health.get(chain)?.damaged,
		sweep,
		damagedFiles,
		damagedError,
		damageBehind,
		async damage(chain, manifest) {
			const h = healthOf(chain);
			const swept = sweep(chain, manifest);
			if (!h.rechecking && Date.now() - h.recheckedAt >= recheckMs) {
				const done = swept.then(() => checkPaths(h, [...h.whole.keys()], true)).catch(() => {});
				h.rechecking = done.finally(() => {
					h.recheckedAt = Date.now();
					h.rechecking = undefined;
				});
			}
			// What is known after at most half a second: the first check of a large folder's files
			// goes on in the background, and probes must answer quickly.
			let timer: NodeJS.Timeout | undefined;
			await Promise.race([
				Promise.all([swept, h.rechecking]),
				new Promise((r) => {
					timer = setTimeout(r, 500);
				}),
			]);
			clearTimeout(timer);
			return damagedFiles(chain, listedPaths(dataDir, manifest));
		},
	};
}
