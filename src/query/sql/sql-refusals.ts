import { DATASETS } from "../../extract/rows.js";
import { METADATA_TABLE_NAMES } from "../../store/format/records.js";
import type { SqlLimits } from "./sql-limits.js";
import { scrubText } from "./sql-scrub.js";

/*
 * Every way a user's statement is refused or stopped, as the client's error: a status, a stable
 * code and a message saying how to ask again. Kept together so the codes docs/sql.md lists are
 * in one place.
 */

/** A statement refused or stopped, with the status, a stable code and how to fix it. */
export class SqlRefusedError extends Error {
	constructor(
		readonly status: 400 | 503,
		readonly code: string,
		message: string,
	) {
		super(message);
		this.name = "SqlRefusedError";
	}
}

/** The first line of a DuckDB error, with every folder of the server written as its placeholder (sql-scrub.ts). */
export function cleanMessage(err: unknown, paths: readonly [string, string][]): string {
	const first = String((err as Error)?.message ?? err).split("\n")[0] ?? "";
	return scrubText(first, paths).slice(0, 600);
}

const VIEWS_HINT = `the views are ${[...DATASETS, ...METADATA_TABLE_NAMES, "chunks"].join(", ")} (data/README.md)`;

export const readFailed = (message: string) =>
	new SqlRefusedError(
		503,
		"SQL_READ_FAILED",
		`a file of the lake could not be read (${message}): retry later; if it persists, the operator's npm run verify names the damaged file`,
	);

/** Why DuckDB refused or stopped a statement, as the client's error. */
export function refusal(err: unknown, paths: readonly [string, string][], limits: SqlLimits): SqlRefusedError {
	const message = cleanMessage(err, paths);
	if (/^Permission Error/.test(message))
		return new SqlRefusedError(
			400,
			"SQL_FORBIDDEN",
			`${message}: a statement reads the chain's datasets through its views and nothing else (no other file, URL, extension or setting); ${VIEWS_HINT}`,
		);
	if (/^Out of Memory Error/.test(message))
		return new SqlRefusedError(
			400,
			"SQL_MEMORY_LIMIT",
			`the statement needed more than the ${limits.memory} of memory one statement may use (${message}): filter or aggregate more, select fewer columns, or add a LIMIT`,
		);
	// A listed file missing or damaged: not the statement's fault (npm run verify names the file).
	if (/^IO Error/.test(message)) return readFailed(message);
	if (/^Catalog Error/.test(message)) return new SqlRefusedError(400, "SQL_INVALID", `${message}; ${VIEWS_HINT}`);
	return new SqlRefusedError(400, "SQL_INVALID", `${message}: fix the statement and send it again`);
}

/** The checks that need no DuckDB: a statement at all, and not too long (before waiting for a slot). */
export function checkSqlText(sql: string, limits: SqlLimits): void {
	if (sql.trim() === "")
		throw new SqlRefusedError(
			400,
			"SQL_MISSING",
			'no statement: send one SELECT as the body (text/plain, or JSON {"sql": "..."})',
		);
	if (sql.length > limits.maxLength)
		throw new SqlRefusedError(
			400,
			"SQL_TOO_LONG",
			`the statement has ${sql.length} characters, above the ${limits.maxLength} this server takes: shorten it (a long IN list is better as a join or a range)`,
		);
}

export const tooManyRows = (limits: SqlLimits) =>
	new SqlRefusedError(
		400,
		"RESULT_TOO_LARGE",
		`the answer has more than ${limits.maxRows} rows, the most this server sends: aggregate, filter, or add a LIMIT (and page with OFFSET or a block_number range)`,
	);

export const tooLarge = (bytes: number, limits: SqlLimits) =>
	new SqlRefusedError(
		400,
		"RESPONSE_TOO_LARGE",
		`the answer is over ${(limits.maxBytes / 1024 / 1024).toFixed(1)} MiB (${(bytes / 1024 / 1024).toFixed(1)} MiB so far), the most this server sends: select fewer columns or rows`,
	);
