/**
 * How a store may be set up (createStore's options) and the defaults its callers show in their
 * flags (scripts/serve.ts, api/sql-flags.ts): apart from the store itself, so a flag parser
 * imports no DuckDB.
 */

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
	 * DuckDB's threads for each of this process's queries (default DEFAULT_THREADS). Several API
	 * processes on one machine share its cores: give each its share.
	 */
	threads?: number;
	/** SNAPSHOT_MAX_AGE_MS, for tests. */
	snapshotMaxAgeMs?: number;
	/** Blocks whose hash and timestamp are kept in memory (block-stamps.ts; default MAX_STAMPED_BLOCKS), for tests. */
	maxStampedBlocks?: number;
	/**
	 * Where the files come from when `dataDir` is a read-through cache of a lake in a bucket
	 * (remote/file-cache.ts): each query holds the files it reads (fetched if not here) until it
	 * ends. Then files are not checked in the background (that would fetch them all): a damaged
	 * or missing one shows when a query reads it.
	 */
	files?: { hold(paths: readonly string[]): Promise<() => void> };
	/**
	 * After the ranks' block, a token's holders pages read the holder ranks only when at least this
	 * many of its ranked holdings fill row groups of their own in the ranks file (default
	 * RANKS_MIN_HOLDINGS, 8,192). Below that, summing its holdings from the index files costs less
	 * than reading its ranked rows and the changes after them (BENCHMARKS.md). 0: every token, for
	 * tests. (At the ranks' own block every token's pages read them: holders.ts.)
	 */
	ranksMinHoldings?: number;
}

export const DEFAULT_MEMORY_LIMIT = "2GB";

/**
 * DuckDB's threads for each query: one. The pool's connections (connection-pool.ts) already run
 * up to four queries at once, each on its own thread; a second thread inside a query only paid
 * for handing its work over. On M, one serve process with 1 thread against one with 2, on a
 * 2-core machine (`npm run bench:layouts -- --b-flags="--threads 1"`): every benchmark question
 * 0.89-1.04 of its p50 (a 1,000-block range too: 0.91), the mixed load 254 → 298 requests/s
 * (BENCHMARKS.md "twenty-third figures"). A machine with many cores may give a process more.
 */
export const DEFAULT_THREADS = 1;

/** A DuckDB memory size as the flags take it ("512MB", "2GB", "1.5GiB"), or null if it is none. */
export function parseMemoryLimit(text: string): string | null {
	return /^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(text.trim()) ? text.trim() : null;
}
