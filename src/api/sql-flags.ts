import { DEFAULT_SQL_LIMITS, type SqlLimits } from "../query/sql/sql-limits.js";
import { parseMemoryLimit } from "../query/store/store-options.js";
import type { SqlEndpointOptions } from "./routes/sql.js";

/**
 * The longest a statement may run: it may first wait as long for a slot, and the server answers
 * every request within 30 s (server-timeouts.ts), so two budgets and the instance's making must fit.
 */
export const MAX_SQL_TIMEOUT_MS = 14_000;

/** The SQL endpoint's flags for serve (README "SQL over HTTP"); each has an environment twin. */
export const SQL_FLAG_OPTIONS = {
	sql: { type: "boolean", default: process.env.CHAINLAKE_SQL === "1" },
	"sql-timeout-ms": { type: "string", default: process.env.CHAINLAKE_SQL_TIMEOUT_MS || "" },
	"sql-memory": { type: "string", default: process.env.CHAINLAKE_SQL_MEMORY || DEFAULT_SQL_LIMITS.memory },
	"sql-max-rows": { type: "string", default: process.env.CHAINLAKE_SQL_MAX_ROWS || String(DEFAULT_SQL_LIMITS.maxRows) },
	"sql-max-length": {
		type: "string",
		default: process.env.CHAINLAKE_SQL_MAX_LENGTH || String(DEFAULT_SQL_LIMITS.maxLength),
	},
	"sql-concurrency": {
		type: "string",
		default: process.env.CHAINLAKE_SQL_CONCURRENCY || String(DEFAULT_SQL_LIMITS.concurrency),
	},
	"sql-key-concurrency": { type: "string", default: process.env.CHAINLAKE_SQL_KEY_CONCURRENCY || "" },
} as const;

/**
 * The endpoint's settings from the flags; the time budget defaults to the query budget and the
 * answer's size to the list routes' (--max-response-mb). Throws an Error naming the flag to fix.
 */
export function sqlFlags(
	values: Record<string, unknown>,
	defaults: { timeoutMs: number; maxBytes: number; threads: number },
): SqlEndpointOptions {
	const whole = (flag: string, max: number, fallback?: number): number => {
		const text = String(values[flag] ?? "");
		if (text === "" && fallback !== undefined) return fallback;
		const n = Number(text);
		if (!/^\d{1,10}$/.test(text) || n < 1 || n > max)
			throw new Error(`--${flag} must be a whole number from 1 to ${max}, not ${JSON.stringify(values[flag])}`);
		return n;
	};
	const memory = parseMemoryLimit(String(values["sql-memory"]));
	if (memory === null)
		throw new Error(`--sql-memory must be a size such as 256MB or 1GB, not ${JSON.stringify(values["sql-memory"])}`);
	const concurrency = whole("sql-concurrency", 64);
	const limits: SqlLimits = {
		timeoutMs: whole("sql-timeout-ms", MAX_SQL_TIMEOUT_MS, Math.min(defaults.timeoutMs, MAX_SQL_TIMEOUT_MS)),
		memory,
		maxRows: whole("sql-max-rows", 100_000_000),
		maxBytes: defaults.maxBytes,
		maxLength: whole("sql-max-length", 1_000_000),
		concurrency,
		// Half the slots by default (at least one): a key alone cannot hold them all once there are two.
		keyConcurrency: whole("sql-key-concurrency", concurrency, Math.max(1, Math.floor(concurrency / 2))),
		threads: defaults.threads,
	};
	return { enabled: values.sql === true, limits };
}
