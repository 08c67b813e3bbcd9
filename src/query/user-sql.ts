import { realpathSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
	type DuckDBConnection,
	DuckDBInstance,
	type DuckDBType,
	DuckDBTypeId,
	JSDuckDBValueConverter,
	JsonDuckDBValueConverter,
	StatementType,
} from "@duckdb/node-api";
import type { ColumnKind } from "../api/list-columns.js";
import { DATASETS } from "../extract/rows.js";
import { listedFiles, metadataFiles } from "../store/format/manifest.js";
import { type Manifest, METADATA_TABLE_NAMES } from "../store/format/records.js";
import { sqlString } from "../util/sql-string.js";
import { lockDownTo } from "./lock-down.js";
import { datasetViews } from "./views.js";

/**
 * SQL from the API's users (POST /{chain}/v1/sql), each statement in a DuckDB instance of its
 * own, made for it and closed after it:
 * - it can read the Parquet files the chain's manifest lists at the request's snapshot, one by
 *   one (allowed_paths), and nothing else: not the manifest, not the key file, no other path, no
 *   URL, no extension; its configuration is locked before the views are made, so no SET undoes
 *   that (lock-down.ts);
 * - its memory_limit is the per-query memory (DuckDB's limit is per instance, and an instance
 *   runs one statement), and a fresh instance carries nothing over from another request;
 * - the text must be one SELECT (DuckDB's own parser says what it is), and reaches DuckDB only as
 *   a bound parameter of `SELECT * FROM query($1)` (DuckDB's table function that runs one SELECT),
 *   never spliced into SQL of ours.
 * Making an instance and its views costs tens of milliseconds (BENCHMARKS.md): small next to the
 * queries this is for, and the price of no state shared between users.
 */

export interface SqlLimits {
	/** DuckDB time a statement may run (ms) before it is interrupted: 503 QUERY_TIMEOUT. */
	timeoutMs: number;
	/** DuckDB's memory_limit for one statement ("512MB"): 400 SQL_MEMORY_LIMIT past it. */
	memory: string;
	/** Rows an answer may have: 400 RESULT_TOO_LARGE past it. */
	maxRows: number;
	/** Bytes an answer may have, encoded: 400 RESPONSE_TOO_LARGE past it. */
	maxBytes: number;
	/** Characters a statement may have: 400 SQL_TOO_LONG past it. */
	maxLength: number;
	/** Statements run at once in this process (each with its own memory): others wait their turn. */
	concurrency: number;
	/** DuckDB threads per statement. */
	threads: number;
}

export const DEFAULT_SQL_LIMITS: SqlLimits = {
	timeoutMs: 10_000,
	memory: "512MB",
	maxRows: 100_000,
	maxBytes: 32 * 1024 * 1024,
	maxLength: 16_384,
	concurrency: 1,
	threads: 1,
};

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

export interface SqlColumn {
	name: string;
	/** DuckDB's type, as DuckDB writes it ("BIGINT", "DECIMAL(38,0)", "VARCHAR[]"). */
	type: string;
	/** How the tabular formats carry it (api/list-columns.ts): Arrow type, JSON number or text. */
	kind: ColumnKind;
}

/** Where the rows go, a chunk at a time; `rows` returns the bytes they added to the answer. */
export interface SqlSink {
	columns(columns: SqlColumn[]): void;
	rows(rows: unknown[][]): number;
}

const INTEGERS = new Set<DuckDBTypeId>([
	DuckDBTypeId.TINYINT,
	DuckDBTypeId.SMALLINT,
	DuckDBTypeId.INTEGER,
	DuckDBTypeId.BIGINT,
	DuckDBTypeId.UTINYINT,
	DuckDBTypeId.USMALLINT,
	DuckDBTypeId.UINTEGER,
]);
const NESTED = new Set<DuckDBTypeId>([
	DuckDBTypeId.LIST,
	DuckDBTypeId.ARRAY,
	DuckDBTypeId.STRUCT,
	DuckDBTypeId.MAP,
	DuckDBTypeId.UNION,
]);

/**
 * A result column's kind: integers up to 64 bits as numbers (Int64, or Uint64 for UBIGINT),
 * booleans and floats as such, nested values as JSON; everything else as text: DECIMAL and the
 * 128-bit integers exactly (a float would round them), dates and times as DuckDB writes them,
 * BLOB as 0x hex.
 */
export function kindOf(type: DuckDBType): ColumnKind {
	if (INTEGERS.has(type.typeId)) return "int";
	if (type.typeId === DuckDBTypeId.UBIGINT) return "uint64";
	if (type.typeId === DuckDBTypeId.BOOLEAN) return "bool";
	if (type.typeId === DuckDBTypeId.FLOAT || type.typeId === DuckDBTypeId.DOUBLE) return "float";
	if (NESTED.has(type.typeId)) return "json";
	return "text";
}

/** Result column names made unique (`a`, `a_2`), so each row can be an object. */
function uniqueNames(names: string[]): string[] {
	const seen = new Map<string, number>();
	return names.map((n) => {
		const count = (seen.get(n) ?? 0) + 1;
		seen.set(n, count);
		return count === 1 ? n : `${n}_${count}`;
	});
}

/** The first line of a DuckDB error, with the lake's folder written as <lake>. */
function cleanMessage(err: unknown, lake: string): string {
	const first = String((err as Error)?.message ?? err).split("\n")[0] ?? "";
	return first.replaceAll(lake, "<lake>").slice(0, 600);
}

const VIEWS_HINT = `the views are ${[...DATASETS, ...METADATA_TABLE_NAMES, "chunks"].join(", ")} (data/README.md)`;

const readFailed = (message: string) =>
	new SqlRefusedError(
		503,
		"SQL_READ_FAILED",
		`a file of the lake could not be read (${message}): retry later; if it persists, the operator's npm run verify names the damaged file`,
	);

/** Why DuckDB refused or stopped a statement, as the client's error. */
function refusal(err: unknown, lake: string, limits: SqlLimits): SqlRefusedError {
	const message = cleanMessage(err, lake);
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

/** The manifest's chunks as a table (the `chunks` view of npm run sql reads the manifest file, which this instance cannot). */
function chunksTable(m: Manifest | null): string {
	const rows = (m?.chunks ?? []).map(
		(c) =>
			`(${c.from}, ${c.to}, '${c.last_hash.replace(/[^0-9a-fx]/g, "")}', '${String(c.traces).replace(/[^a-z]/g, "")}')`,
	);
	const columns = `"from" BIGINT, "to" BIGINT, last_hash VARCHAR, traces VARCHAR`;
	if (rows.length === 0) return `CREATE TABLE chunks (${columns})`;
	return `CREATE TABLE chunks AS SELECT * FROM (VALUES ${rows.join(", ")}) t("from", "to", last_hash, traces)`;
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

/**
 * Runs one user statement over a snapshot's files under `limits` (the caller holds one of
 * sqlSlots' slots meanwhile); output goes to `sink` (rows) or, with `parquet`, comes back as a
 * Parquet file's bytes. Returns the DuckDB time it used (for the
 * key's rate limit) and the rows it answered.
 */
export async function runUserSql(opts: {
	sql: string;
	dataDir: string;
	manifest: Manifest | null;
	limits: SqlLimits;
	sink?: SqlSink;
	parquet?: boolean;
}): Promise<{ elapsedMs: number; rows: number; parquet?: Buffer }> {
	const { sql, limits } = opts;
	checkSqlText(sql, limits);
	// DuckDB checks a path once resolved (symlinks too): name every file so.
	const lake = realpathSync(opts.dataDir);
	const files = [
		...DATASETS.flatMap((d) => listedFiles(lake, opts.manifest, d)),
		...METADATA_TABLE_NAMES.flatMap((t) => metadataFiles(lake, opts.manifest, t)),
	];
	const out = opts.parquet ? await mkdtemp(join(tmpdir(), "chainlake-sql-")) : null;
	const instance = await DuckDBInstance.create(":memory:", {
		threads: String(limits.threads),
		memory_limit: limits.memory,
	});
	let conn: DuckDBConnection | null = null;
	try {
		await lockDownTo(instance, { paths: files, directories: out ? [`${out}/`] : [] });
		conn = await instance.connect();
		// The views bind the listed files: a failure here is the lake's (a file missing or damaged).
		try {
			for (const statement of [...datasetViews(lake, opts.manifest), chunksTable(opts.manifest)])
				if (!statement.startsWith("--")) await conn.run(statement);
		} catch (err) {
			throw readFailed(cleanMessage(err, lake));
		}

		// What the text is, by DuckDB's parser: one statement, a SELECT (binding it reads no data).
		let count: number;
		let type: StatementType;
		try {
			const extracted = await conn.extractStatements(sql);
			count = extracted.count;
			if (count !== 1)
				throw new SqlRefusedError(
					400,
					"SQL_ONE_STATEMENT",
					`the text holds ${count} statements: send exactly one SELECT per request`,
				);
			const prepared = await extracted.prepare(0);
			type = prepared.statementType;
			prepared.destroySync();
		} catch (err) {
			if (err instanceof SqlRefusedError) throw err;
			throw refusal(err, lake, limits);
		}
		if (type !== StatementType.SELECT)
			throw new SqlRefusedError(
				400,
				"SQL_READ_ONLY",
				`only a read-only SELECT (or WITH ... SELECT, FROM ..., VALUES, DESCRIBE, SUMMARIZE) is run here; this statement is of type ${StatementType[type] ?? type}`,
			);

		const live = conn;
		let interrupted = false;
		const timer = setTimeout(() => {
			interrupted = true;
			live.interrupt();
		}, limits.timeoutMs);
		const started = performance.now();
		try {
			if (out) {
				const target = join(out, "answer.parquet");
				const copy = await live.prepare(
					`COPY (SELECT * FROM query($1) LIMIT ${limits.maxRows + 1}) TO ${sqlString(target)} (FORMAT parquet, COMPRESSION zstd)`,
				);
				copy.bindVarchar(1, sql);
				const written = Number((await copy.runAndReadAll()).getRows()[0]?.[0] ?? 0);
				copy.destroySync();
				if (written > limits.maxRows) throw tooManyRows(limits);
				const bytes = await readFile(target);
				if (bytes.length > limits.maxBytes) throw tooLarge(bytes.length, limits);
				return { elapsedMs: performance.now() - started, rows: written, parquet: bytes };
			}
			const select = await live.prepare(`SELECT * FROM query($1) LIMIT ${limits.maxRows + 1}`);
			select.bindVarchar(1, sql);
			const result = await select.stream();
			const types = result.columnTypes();
			const columns = uniqueNames(result.columnNames()).map((name, i) => ({
				name,
				type: (types[i] as DuckDBType).toString(),
				kind: kindOf(types[i] as DuckDBType),
			}));
			opts.sink?.columns(columns);
			let rows = 0;
			let bytes = 0;
			for (;;) {
				const chunk = await result.fetchChunk();
				if (!chunk || chunk.rowCount === 0) break;
				rows += chunk.rowCount;
				if (rows > limits.maxRows) throw tooManyRows(limits);
				const values = columns.map((c, i) => {
					if (types[i]?.typeId === DuckDBTypeId.BLOB)
						return chunk
							.convertColumnValues(i, JSDuckDBValueConverter)
							.map((b) => (b == null ? null : `0x${Buffer.from(b as Uint8Array).toString("hex")}`));
					const numeric = c.kind === "int" || c.kind === "uint64" || c.kind === "bool" || c.kind === "float";
					return numeric
						? chunk.convertColumnValues(i, JSDuckDBValueConverter)
						: chunk.convertColumnValues(i, JsonDuckDBValueConverter);
				});
				const batch = Array.from({ length: chunk.rowCount }, (_, r) => values.map((v) => v[r] ?? null));
				bytes += opts.sink?.rows(batch) ?? 0;
				if (bytes > limits.maxBytes) throw tooLarge(bytes, limits);
			}
			select.destroySync();
			return { elapsedMs: performance.now() - started, rows };
		} catch (err) {
			if (err instanceof SqlRefusedError) throw err;
			if (interrupted)
				throw new SqlRefusedError(
					503,
					"QUERY_TIMEOUT",
					`the statement ran past its ${limits.timeoutMs} ms budget and was stopped: filter on block_number ranges, aggregate, or add a LIMIT`,
				);
			throw refusal(err, lake, limits);
		} finally {
			clearTimeout(timer);
		}
	} finally {
		conn?.closeSync();
		instance.closeSync();
		if (out) await rm(out, { recursive: true, force: true });
	}
}

const tooManyRows = (limits: SqlLimits) =>
	new SqlRefusedError(
		400,
		"RESULT_TOO_LARGE",
		`the answer has more than ${limits.maxRows} rows, the most this server sends: aggregate, filter, or add a LIMIT (and page with OFFSET or a block_number range)`,
	);

const tooLarge = (bytes: number, limits: SqlLimits) =>
	new SqlRefusedError(
		400,
		"RESPONSE_TOO_LARGE",
		`the answer is over ${(limits.maxBytes / 1024 / 1024).toFixed(1)} MiB (${(bytes / 1024 / 1024).toFixed(1)} MiB so far), the most this server sends: select fewer columns or rows`,
	);

/**
 * At most `limits.concurrency` statements at once (each holds its own memory_limit, so the
 * process's SQL memory is bounded by their product); a statement that cannot start within its
 * time budget is refused as busy, not queued without end.
 */
export function sqlSlots(limits: SqlLimits) {
	let free = limits.concurrency;
	const waiting: (() => void)[] = [];
	const release = () => {
		const next = waiting.shift();
		if (next) next();
		else free++;
	};
	return {
		async acquire(): Promise<() => void> {
			if (free > 0) {
				free--;
				return release;
			}
			return new Promise((resolve, reject) => {
				const go = () => {
					clearTimeout(timer);
					resolve(release);
				};
				const timer = setTimeout(() => {
					waiting.splice(waiting.indexOf(go), 1);
					reject(
						new SqlRefusedError(
							503,
							"BUSY",
							`the server ran other SQL statements for the last ${limits.timeoutMs / 1000} s (${limits.concurrency} at a time): retry later`,
						),
					);
				}, limits.timeoutMs);
				waiting.push(go);
			});
		},
	};
}
