/*
 * The SQL endpoint's limits: what one statement may use (time, memory, rows, bytes, length) and
 * how many run at once, in all and for one key. Set by serve's flags (api/sql-flags.ts); enforced
 * by the runner (user-sql.ts) in its process (sql-processes.ts), its refusals (sql-refusals.ts)
 * and the slots (sql-slots.ts).
 */

export interface SqlLimits {
	/**
	 * DuckDB time a statement may run (ms) before it is interrupted: 503 QUERY_TIMEOUT; one DuckDB
	 * cannot interrupt has its process killed a second later (sql-processes.ts).
	 */
	timeoutMs: number;
	/**
	 * DuckDB's memory_limit for one statement ("512MB"): 400 SQL_MEMORY_LIMIT past it; its process
	 * is killed past this plus PROCESS_ALLOWANCE_BYTES of RSS (memory DuckDB does not count).
	 */
	memory: string;
	/** Rows an answer may have: 400 RESULT_TOO_LARGE past it. */
	maxRows: number;
	/** Bytes an answer may have, encoded: 400 RESPONSE_TOO_LARGE past it. */
	maxBytes: number;
	/** Characters a statement may have: 400 SQL_TOO_LONG past it. */
	maxLength: number;
	/** Statements run at once in this server (a process each, with its memory): others wait their turn. */
	concurrency: number;
	/**
	 * Statements one key may run at once: below `concurrency`, so a key sending bombs leaves the
	 * other slots to other keys. Its further statements wait for its own.
	 */
	keyConcurrency: number;
	/** DuckDB threads per statement. */
	threads: number;
}

export const DEFAULT_SQL_LIMITS: SqlLimits = {
	timeoutMs: 10_000,
	memory: "512MB",
	maxRows: 100_000,
	maxBytes: 32 * 1024 * 1024,
	maxLength: 16_384,
	concurrency: 2,
	keyConcurrency: 1,
	threads: 1,
};
