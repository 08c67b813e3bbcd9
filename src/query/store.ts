import { statSync } from "node:fs";
import { stat } from "node:fs/promises";
import { relative } from "node:path";
import {
	type DuckDBConnection,
	DuckDBInstance,
	type DuckDBPreparedStatement,
	type DuckDBValue,
} from "@duckdb/node-api";
import { DATASETS, type DatasetName } from "../extract/rows.js";
import { INDEXES, type IndexName } from "../store/format/indexes.js";
import { partOf, partPath, partPaths } from "../store/format/key-parts.js";
import { manifestPath } from "../store/format/layout.js";
import {
	GHOST_DATASET,
	ghostFiles,
	listedFiles,
	metadataFiles,
	rankFiles,
	readManifestChecked,
} from "../store/format/manifest.js";
import {
	type ChunkEntry,
	type Manifest,
	METADATA_TABLES,
	type MetadataTable,
	RANK_TABLES,
	RANKS,
	type RankEntry,
	type RankTable,
} from "../store/format/records.js";
import { SETTLE_DEPTH } from "../store/format/run-lookup.js";
import { SCHEMAS } from "../store/format/schema.js";
import { RANK_COLUMNS, RANK_ROW_GROUP_SIZE, usableRanks } from "../store/holdings/holder-ranks.js";
import { type KeyFilter, loadKeyFilter } from "../store/indexes/key-filter.js";
import { indexFiles, isIndexed, listedPaths } from "../store/indexes/listing.js";
import { isFileError, parquetShape } from "../store/repair/verify.js";
import { chainsIn } from "../util/chain.js";
import { sqlString as quote } from "../util/sql-string.js";
import {
	DamagedDataError,
	type DamagedFile,
	dataDamagedMessage,
	manifestDamagedMessage,
} from "./damaged-data-error.js";
import { lockDown } from "./lock-down.js";
import { QueryTimeoutError } from "./query-timeout-error.js";
import { UnavailableError } from "./unavailable-error.js";

export type Row = Record<string, unknown>;
export type Params = Record<string, DuckDBValue>;

/** Connections kept open: DuckDB runs one query per connection at a time, and parallelises inside a query too. */
const POOL_SIZE = 4;
/** Prepared statements kept per connection (a few per route and filter combination). */
const MAX_PREPARED = 256;
/** Default time budget of a query, or of all the queries of one snapshot (one API request) together. */
export const DEFAULT_QUERY_TIMEOUT_MS = 10_000;
/**
 * How long after a request took its snapshot it may still start a query. Replaced files stay for
 * the writer's grace (5 minutes by default, store/retire-later.ts) or the Delta export's retention
 * after the manifest that replaced them: a request that waited longer for a connection could
 * open a deleted file, so it is refused as busy instead (the query budget counts DuckDB time, not
 * the wait). Kept under 30 s, so that a grace shortened to that is still safe.
 */
export const SNAPSHOT_MAX_AGE_MS = 25_000;

export interface StoreOptions {
	/**
	 * DuckDB time a query may use before it is interrupted and fails with QueryTimeoutError; a
	 * snapshot's queries share one budget, so one API request cannot run longer than this in
	 * total. Time spent waiting for a free connection does not count.
	 */
	queryTimeoutMs?: number;
	/**
	 * How often (at most) `damage()` checks again that the files found whole are still there at
	 * the size they had (default 60 000 ms; 0: at every call). Between checks a file deleted or cut
	 * short shows when a query reads it.
	 */
	damageRecheckMs?: number;
	/**
	 * DuckDB's memory limit for this process's queries (a size such as "2GB"; default
	 * DEFAULT_MEMORY_LIMIT). Without one DuckDB takes 80% of the machine's RAM per process, so N
	 * API processes on one machine would promise it N times over.
	 */
	memoryLimit?: string;
	/**
	 * DuckDB's threads for this process's queries (default 2, this machine's cores). Several API
	 * processes on one machine share its cores: give each its share.
	 */
	threads?: number;
	/** SNAPSHOT_MAX_AGE_MS, for tests. */
	snapshotMaxAgeMs?: number;
	/**
	 * Where the files come from when `dataDir` is a read-through cache of a lake in a bucket
	 * (remote/file-cache.ts): each query holds the files it reads (fetched if not here) until it
	 * ends. Then files are not checked in the background (that would fetch them all): a damaged
	 * or missing one shows when a query reads it.
	 */
	files?: { hold(paths: readonly string[]): Promise<() => void> };
	/**
	 * A token's holders pages read the holder ranks only when at least this many of its ranked
	 * holdings fill row groups of their own in the ranks file (default RANK_ROW_GROUP_SIZE: one
	 * row group). Below that, summing its holdings from the index files costs less than reading
	 * its ranked rows (BENCHMARKS.md). 0: every token, for tests.
	 */
	ranksMinHoldings?: number;
}

export const DEFAULT_MEMORY_LIMIT = "2GB";

/** A DuckDB memory size as the flags take it ("512MB", "2GB", "1.5GiB"), or null if it is none. */
export function parseMemoryLimit(text: string): string | null {
	return /^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(text.trim()) ? text.trim() : null;
}

export interface Store {
	/** Chains with data, as `eip155-<n>` (a listing of the data folder at most a second old). */
	chains(): string[];
	/** Whether `chain` has data here (looked for again at once when the listing lacks it). */
	serves(chain: string): boolean;
	/** Datasets of a chain that have at least one file. */
	hasDataset(chain: string, dataset: DatasetName): boolean;
	/**
	 * Runs `sql` with bound parameters. `sql` names datasets as `{transfers}` etc.; the store
	 * replaces them with the chain's own file list. Only the store builds SQL text, and only from
	 * its own identifiers and paths: every user value arrives in `params`. Fails with
	 * QueryTimeoutError past the time budget.
	 */
	query(chain: string, sql: string, params?: Params): Promise<Row[]>;
	/**
	 * The chain's files as of now, fixed: every query of one API request goes through one
	 * snapshot, so a reorg or compaction committed meanwhile cannot show it a mix of states.
	 * Its queries share one time budget.
	 */
	snapshot(chain: string): Snapshot;
	/**
	 * The listed files of the chain found missing or damaged (for /readyz): each file is checked
	 * once when a manifest first lists it (names are never reused), and again when a query on it
	 * fails. Waits for the check of the current manifest's files.
	 */
	damage(chain: string): Promise<DamagedFile[]>;
	/** What is wrong with the chain's manifest (then every snapshot fails with MANIFEST_DAMAGED), or null. */
	manifestProblem(chain: string): string | null;
	/**
	 * The chain's files' state, for HTTP caching (api/http-cache.ts): the manifest's generation,
	 * which every write changes, and the final block (no answer at or below it changes again: the
	 * follower's final_through, or SETTLE_DEPTH below the tip in a folder no follower keeps).
	 * Null for a chain with no readable manifest.
	 */
	state(chain: string): { generation: number; final: number | null } | null;
	close(): void;
}

/** `{dataset}`, `{index}` or `{name@from-to}` (with its own block window) in a statement's text. */
const PLACEHOLDER = /\{([a-z][a-z0-9_]*)(?:@(\d{1,15})-(\d{1,15}))?\}/g;

export interface Snapshot {
	chain: string;
	hasDataset(dataset: DatasetName): boolean;
	/**
	 * `window`: read only the files of chunks that overlap these blocks (see list.ts); a
	 * `{name@from-to}` placeholder has a window of its own. `key`: the
	 * wallet or hash the statement looks up in an index (`{transfers_by_address}` etc.); index
	 * runs whose key filter rules it out are not read at all, and a statement left with no file
	 * to read answers no rows without running.
	 */
	query(sql: string, params?: Params, window?: readonly [number, number], key?: string): Promise<Row[]>;
	/** Whether a chunk's rows of `index` can be read (its own index file, or a merged run). */
	indexed(index: IndexName, chunk: ChunkEntry): boolean;
	/** The holder ranks `{erc20_ranks}` reads, if usable with this snapshot's files (store/holder-ranks.ts). */
	ranks(): RankEntry | null;
	/** Whether `token` has enough ranked holdings for its holders pages to read the ranks (StoreOptions.ranksMinHoldings). */
	ranked(token: string): Promise<boolean>;
	/** The chunks stored, in block order. */
	chunks(): readonly ChunkEntry[];
	/** The manifest this snapshot reads (the SQL endpoint's views list its files); never to be changed. */
	manifest(): Manifest | null;
	/** Blocks per partition of the chain's writers (manifest `partition_size`), if recorded. */
	partitionSize(): number | undefined;
	/** The newest block stored, or null while there is none. */
	head(): number | null;
	/**
	 * `compute()`'s result, computed once per state of the chain's files: the files a manifest
	 * lists never change, so an answer that depends only on them (the latest block) can be
	 * reused until the manifest changes. A failure is not kept.
	 */
	memo<T>(key: string, compute: () => Promise<T>): Promise<T>;
}

/**
 * The one module that talks to DuckDB for the API. Reads the Parquet files in place (no import
 * step): each `{dataset}` in a statement becomes `read_parquet([...])` over the files the chain's
 * manifest lists, so ranges a backfill appends are seen by the next query and a crashed run's
 * leftovers never are. Prepared statements are cached per connection (and per file list).
 * DuckDB can reach no file outside `dataDir` (see lockDown), and no query runs past its budget.
 */
/**
 * What changes with every save of a manifest file, from one stat: its inode (a save renames a new
 * file into place), its ctime and mtime (to the nanosecond the filesystem keeps) and its size. One
 * system call per request instead of the five it took to also read the generation from the
 * file's first bytes (issue 26: synchronous file-system calls were 16% of a request's JS); "none"
 * while there is no manifest.
 */
function stampOf(path: string): string {
	const st = statSync(path, { bigint: true, throwIfNoEntry: false });
	return st ? `${st.ino}:${st.ctimeNs}:${st.mtimeNs}:${st.size}` : "none";
}

export async function createStore(dataDir: string, options: StoreOptions = {}): Promise<Store> {
	const budgetMs = options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
	const maxAgeMs = options.snapshotMaxAgeMs ?? SNAPSHOT_MAX_AGE_MS;
	// setTimeout fires at once for delays past 2^31-1 ms: refuse what it cannot time.
	if (!Number.isInteger(budgetMs) || budgetMs < 1 || budgetMs > 2 ** 31 - 1) {
		throw new Error(`queryTimeoutMs must be a whole number of milliseconds from 1 to ${2 ** 31 - 1}, got ${budgetMs}`);
	}
	const instance = await DuckDBInstance.create(":memory:", {
		threads: String(options.threads ?? 2),
		memory_limit: options.memoryLimit ?? DEFAULT_MEMORY_LIMIT,
	});
	await lockDown(instance, dataDir);
	const idle: { conn: DuckDBConnection; prepared: Map<string, DuckDBPreparedStatement> }[] = [];
	for (let i = 0; i < POOL_SIZE; i++) idle.push({ conn: await instance.connect(), prepared: new Map() });
	// Waiting queries in the order their requests (snapshots) began, not the order they asked:
	// a request's second or third query (list windows) goes ahead of requests that came later,
	// so under load a request waits about as long as the queue was when it arrived, instead of
	// once more at the back for every query it runs.
	type Pooled = (typeof idle)[number];
	const waiting: { since: number; take: (c: Pooled) => void }[] = [];
	const acquire = (since: number) =>
		new Promise<Pooled>((take) => {
			const c = idle.pop();
			if (c) return take(c);
			const w = { since, take };
			let i = waiting.length;
			while (i > 0 && (waiting[i - 1] as (typeof waiting)[number]).since > since) i--;
			waiting.splice(i, 0, w);
		});
	const releaseConnection = (c: Pooled) => {
		const next = waiting.shift();
		if (next) next.take(c);
		else idle.push(c);
	};

	// The manifest of each chain, re-read when it changes (a backfill appended ranges), or what is
	// wrong with it. Each new one's files are checked in the background (see damage()).
	const manifests = new Map<string, { stamp: string; manifest: Manifest | null; problem: string | null }>();
	const manifestState = (chain: string) => {
		const path = manifestPath(dataDir, chain);
		const stamp = stampOf(path);
		const cached = manifests.get(chain);
		if (cached?.stamp === stamp) return cached;
		const state = { stamp, ...readManifestChecked(dataDir, chain) };
		manifests.set(chain, state);
		if (state.manifest) void sweep(chain, state.manifest);
		return state;
	};
	const manifestOf = (chain: string): Manifest | null => manifestState(chain).manifest;
	const snapshotOf = (chain: string): Manifest | null => {
		const { manifest, problem } = manifestState(chain);
		if (problem != null) throw new DamagedDataError("MANIFEST_DAMAGED", manifestDamagedMessage(chain, problem));
		return manifest;
	};

	// Listed files found whole (with their size), and found missing or damaged (with what is
	// wrong), by chain and path. A file is checked when a manifest first lists it (parquetShape: no
	// DuckDB, a few bytes read; names are never reused, so once is enough), again when a query
	// reading it fails, and by size now and then for /readyz (damage()). Requests only look up
	// the damaged ones.
	const recheckMs = options.damageRecheckMs ?? 60_000;
	type Health = {
		whole: Map<string, number>;
		damaged: Map<string, string>;
		recheckedAt: number;
		rechecking?: Promise<void>;
	};
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
	/** `{dataset}` → the files `manifest` lists (of the chunks overlapping `window`, if given), or a
	 * typed empty relation while there are none. `{ghost_blocks}` is the reorged-out blocks, with
	 * the columns of blocks; an index (`{transfers_by_address}`) has its source's columns plus `address`;
	 * `{token_metadata}` and `{token_uris}` are the token metadata (store/token-metadata.ts). */
	const expand = (
		manifest: Manifest | null,
		sql: string,
		queryWindow: readonly [number, number] | undefined,
		key: string | undefined,
		read: { files: number; paths?: string[] },
	) =>
		sql.replace(PLACEHOLDER, (whole, name: string, a?: string, b?: string) => {
			// `{name@a-b}`: this relation's own block window (a part of a statement that reads
			// fewer blocks than the rest, like a balance's unsettled tail).
			const window = a === undefined ? queryWindow : ([Number(a), Number(b)] as const);
			if ((RANK_TABLES as readonly string[]).includes(name)) {
				// The holder ranks (store/holder-ranks.ts); callers ask snapshot.ranks() whether to use them.
				const files = rankFiles(dataDir, manifest, name as RankTable);
				read.files += files.length;
				read.paths?.push(...files);
				if (files.length > 0) return `read_parquet([${files.map(quote).join(", ")}])`;
				return `(SELECT ${Object.entries(RANK_COLUMNS)
					.map(([c, type]) => `NULL::${type} AS "${c}"`)
					.join(", ")} WHERE false)`;
			}
			if (name in METADATA_TABLES) {
				const table = METADATA_TABLES[name as MetadataTable];
				const files = metadataFiles(dataDir, manifest, name as MetadataTable);
				read.files += files.length;
				read.paths?.push(...files);
				if (files.length > 0) return `read_parquet([${files.map(quote).join(", ")}])`;
				return `(SELECT ${Object.entries(table.columns)
					.map(([c, type]) => `NULL::${type} AS "${c}"`)
					.join(", ")} WHERE false)`;
			}
			const ghost = name === GHOST_DATASET;
			const index = name in INDEXES ? INDEXES[name as IndexName] : undefined;
			if (!ghost && !index && !DATASETS.includes(name as DatasetName)) return whole;
			const files = ghost
				? ghostFiles(dataDir, manifest)
				: index
					? manifest
						? indexFiles(dataDir, manifest, name as IndexName, window)
								.filter((f) => key === undefined || !f.filter || filters.get(f.filter)?.has(key) !== false)
								// A key reads the one key-range part it can be in (store/format/key-parts.ts).
								.flatMap((f) =>
									key === undefined
										? partPaths(f.path, f.parts)
										: [partPath(f.path, partOf(key.toLowerCase(), f.parts))],
								)
						: []
					: listedFiles(dataDir, manifest, name as DatasetName, window);
			read.files += files.length;
			read.paths?.push(...files);
			if (files.length > 0) return `read_parquet([${files.map(quote).join(", ")}])`;
			const source = ghost ? "blocks" : (index?.source ?? (name as DatasetName));
			const own: Record<string, string> | undefined = index && "columns" in index ? index.columns : undefined;
			const typed = own
				? Object.entries(own)
				: Object.entries(SCHEMAS[source] as Record<string, readonly [string, string]>).map(
						([c, [type]]) => [c, type] as const,
					);
			const columns = typed.map(([c, type]) => `NULL::${type} AS "${c}"`);
			if (index && !own && !(index.key in SCHEMAS[source])) columns.unshift(`NULL::VARCHAR AS "${index.key}"`);
			return `(SELECT ${columns.join(", ")} WHERE false)`;
		});

	const ranksMinHoldings = options.ranksMinHoldings ?? RANK_ROW_GROUP_SIZE;
	// Per ranks file, the tokens with row groups of their own and how many holdings those hold,
	// from the file's row-group statistics (read once: a file name is never reused; only the
	// listed file's are kept).
	const ranked = new Map<string, Promise<Map<string, number>>>();
	const rankedCounts = (manifest: Manifest | null): Promise<Map<string, number>> => {
		const [path] = rankFiles(dataDir, manifest, RANKS);
		if (!path) return Promise.resolve(new Map());
		let p = ranked.get(path);
		if (!p) {
			ranked.clear();
			p = (async () => {
				const release = options.files ? await options.files.hold([path]) : () => {};
				try {
					const rows = await run(
						manifest,
						`SELECT stats_min_value AS token, sum(row_group_num_rows) AS n FROM parquet_metadata(${quote(path)})
						 WHERE path_in_schema = 'token' AND stats_min_value = stats_max_value GROUP BY 1`,
						{},
						{ leftMs: budgetMs, since: performance.now() },
					);
					return new Map(rows.map((r) => [String(r.token), Number(r.n)]));
				} finally {
					release();
				}
			})();
			ranked.set(path, p);
			// Not kept when it failed: the next request tries again (and sums meanwhile).
			p.catch(() => ranked.delete(path));
		}
		return p.catch(() => new Map());
	};

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

	/** What is left of a query's or a snapshot's time budget, in ms. */
	type Budget = { leftMs: number; since: number };

	async function run(
		manifest: Manifest | null,
		sql: string,
		params: Params,
		budget: Budget,
		window?: readonly [number, number],
		key?: string,
	): Promise<Row[]> {
		if (key !== undefined) await loadFilters(filtersOf(manifest, sql, window));
		const read = { files: 0, paths: [] as string[] };
		const text = expand(manifest, sql, window, key, read);
		// A file known damaged: say so at once (DuckDB would fail on it, or read what is left).
		if (manifest && (health.get(manifest.chain)?.damaged.size ?? 0) > 0) {
			const bad = damagedFiles(manifest.chain, read.paths);
			if (bad.length > 0) throw damagedError(manifest.chain, bad);
		}
		// A key lookup whose every candidate file the filters ruled out: no rows, no query.
		if (key !== undefined && read.files === 0) return [];
		if (budget.leftMs <= 0) throw new QueryTimeoutError(budgetMs);
		// From a bucket: the files are fetched before a connection is taken (the fetch is not DuckDB
		// time), and kept until the query ends.
		let release = () => {};
		if (options.files)
			try {
				release = await options.files.hold(read.paths);
			} catch (err) {
				throw new UnavailableError(
					"LAKE_UNREACHABLE",
					`the lake's files could not be fetched from its bucket (${(err as Error).message.split("\n")[0]}): retry later`,
				);
			}
		const c = await acquire(budget.since);
		// (A reader over a bucket holds its files in the cache until the query ends, and the bucket
		// keeps replaced files for the lake's retention: a long fetch is no reason to refuse.)
		if (!options.files && performance.now() - budget.since > maxAgeMs) {
			release();
			releaseConnection(c);
			throw new UnavailableError(
				"BUSY",
				`the server is too busy: this request waited over ${maxAgeMs / 1000} s for a query slot; retry later`,
			);
		}
		const started = performance.now();
		// interrupt() stops the query running on this connection; the timer is cleared before the
		// connection goes back to the pool, so it never hits another request's query (and an
		// interrupt reaching a connection whose query just ended is a no-op).
		let interrupted = false;
		const timer = setTimeout(() => {
			interrupted = true;
			c.conn.interrupt();
		}, budget.leftMs);
		try {
			let stmt = c.prepared.get(text);
			if (!stmt) {
				stmt = await c.conn.prepare(text);
				c.prepared.set(text, stmt);
				// The text embeds the file list, so appended ranges retire old statements.
				if (c.prepared.size > MAX_PREPARED) {
					const [oldest, old] = c.prepared.entries().next().value as [string, DuckDBPreparedStatement];
					old.destroySync();
					c.prepared.delete(oldest);
				}
			}
			stmt.clearBindings();
			if (Object.keys(params).length > 0) stmt.bind(params);
			const reader = await stmt.runAndReadAll();
			return reader.getRowObjectsJS() as Row[];
		} catch (err) {
			if (interrupted) throw new QueryTimeoutError(budgetMs);
			throw (manifest && (await damageBehind(manifest.chain, read.paths, err))) || err;
		} finally {
			clearTimeout(timer);
			budget.leftMs -= performance.now() - started;
			release();
			releaseConnection(c);
		}
	}

	// Memoised answers per manifest object: a changed manifest is a new object, so its answers
	// start afresh, and the old ones are collected with it.
	const memos = new WeakMap<Manifest, Map<string, Promise<unknown>>>();
	const memo = <T>(manifest: Manifest | null, key: string, compute: () => Promise<T>): Promise<T> => {
		if (!manifest) return compute();
		let m = memos.get(manifest);
		if (!m) {
			m = new Map();
			memos.set(manifest, m);
		}
		const memoised = m;
		let p = memoised.get(key) as Promise<T> | undefined;
		if (!p) {
			p = compute();
			memoised.set(key, p);
			p.catch(() => memoised.delete(key));
		}
		return p;
	};

	// The chains, from a listing of the data folder kept for a second (a request asks twice): a
	// chain not in it is looked for again at once, so a chain a backfill just started is served
	// by its first request; one whose folder was removed is forgotten within the second.
	let listed = { at: Number.NEGATIVE_INFINITY, chains: [] as string[] };
	const chains = (): string[] => {
		if (performance.now() - listed.at > 1000) listed = { at: performance.now(), chains: chainsIn(dataDir) };
		return listed.chains;
	};
	const has = (chain: string): boolean => {
		if (chains().includes(chain)) return true;
		listed = { at: performance.now(), chains: chainsIn(dataDir) };
		return listed.chains.includes(chain);
	};
	// Per manifest object (a changed manifest is a new one): its generation and final block.
	const states = new WeakMap<Manifest, { generation: number; final: number | null }>();
	const known = (chain: string) => {
		if (!has(chain)) throw new Error(`unknown chain ${chain}`);
	};

	return {
		chains,
		serves: has,
		hasDataset: (chain, dataset) => listedFiles(dataDir, manifestOf(chain), dataset).length > 0,
		async query(chain, sql, params = {}) {
			known(chain);
			return run(snapshotOf(chain), sql, params, { leftMs: budgetMs, since: performance.now() });
		},
		snapshot(chain) {
			known(chain);
			const manifest = snapshotOf(chain);
			const budget = { leftMs: budgetMs, since: performance.now() };
			return {
				chain,
				hasDataset: (dataset) => listedFiles(dataDir, manifest, dataset).length > 0,
				query: (sql, params = {}, window, key) => run(manifest, sql, params, budget, window, key),
				indexed: (index, chunk) => manifest !== null && isIndexed(manifest, index, chunk),
				ranks: () => usableRanks(dataDir, manifest),
				ranked: async (token) =>
					ranksMinHoldings <= 0 || ((await rankedCounts(manifest)).get(token) ?? 0) >= ranksMinHoldings,
				chunks: () => [...(manifest?.chunks ?? [])].sort((a, b) => a.from - b.from),
				manifest: () => manifest,
				partitionSize: () => manifest?.partition_size,
				// The manifest's last block: the head, without reading a file.
				head: () => (manifest?.chunks.length ? Math.max(...manifest.chunks.map((c) => c.to)) : null),
				memo: (key, compute) => memo(manifest, key, compute),
			};
		},
		async damage(chain) {
			const manifest = manifestOf(chain);
			if (!manifest) return [];
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
		manifestProblem: (chain) => manifestState(chain).problem,
		state(chain) {
			if (!has(chain)) return null;
			const { manifest } = manifestState(chain);
			if (!manifest) return null;
			let state = states.get(manifest);
			if (!state) {
				const tip = manifest.chunks.length > 0 ? Math.max(...manifest.chunks.map((c) => c.to)) : null;
				const final = manifest.final_through ?? (tip === null ? null : tip - SETTLE_DEPTH);
				state = { generation: manifest.generation ?? 0, final };
				states.set(manifest, state);
			}
			return state;
		},
		close() {
			for (const c of idle) {
				for (const s of c.prepared.values()) s.destroySync();
				c.conn.closeSync();
			}
			instance.closeSync();
		},
	};
}
