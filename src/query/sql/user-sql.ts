import { realpathSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
	type DuckDBConnection,
	type DuckDBExtractedStatements,
	DuckDBInstance,
	type DuckDBPreparedStatement,
	type DuckDBType,
	DuckDBTypeId,
	JSDuckDBValueConverter,
	JsonDuckDBValueConverter,
	StatementType,
} from "@duckdb/node-api";
import { DATASETS } from "../../extract/rows.js";
import { listedFiles, metadataFiles } from "../../store/format/manifest.js";
import { type Manifest, METADATA_TABLE_NAMES } from "../../store/format/records.js";
import { sqlString } from "../../util/sql-string.js";
import { lockDownTo } from "../lock-down.js";
import { datasetViews } from "../views.js";
import { refuseIntrospection } from "./refuse-introspection.js";
import { kindOf, type SqlSink, uniqueNames } from "./result-columns.js";
import type { SqlLimits } from "./sql-limits.js";
import {
	checkSqlText,
	cleanMessage,
	readFailed,
	refusal,
	SqlRefusedError,
	tooLarge,
	tooManyRows,
} from "./sql-refusals.js";
import { NEUTRAL_DIRECTORIES, scrubText, scrubValue, serverPaths } from "./sql-scrub.js";

/**
 * SQL from the API's users (POST /{chain}/v1/sql), each statement in a DuckDB instance of its
 * own, made for it and closed after it:
 * - it can read the Parquet files the chain's manifest lists at the request's snapshot, one by
 *   one (allowed_paths), and nothing else: not the manifest, not the key file, no other path, no
 *   URL, no extension; its configuration is locked before the views are made, so no SET undoes
 *   that (query/lock-down.ts);
 * - its memory_limit is the per-query memory (DuckDB's limit is per instance, and an instance
 *   runs one statement), and a fresh instance carries nothing over from another request;
 * - the text must be one SELECT (DuckDB's own parser says what it is), and reaches DuckDB only as
 *   a bound parameter of `SELECT * FROM query($1)` (DuckDB's table function that runs one SELECT),
 *   never spliced into SQL of ours;
 * - nothing it answers names a folder of the server: the catalog and settings functions are
 *   refused (refuse-introspection.ts), the instance's home, secret and extension folders are
 *   neutral, and every string, column name and error is scrubbed (sql-scrub.ts).
 * It runs in a process of its own (sql-child.ts, started by sql-processes.ts), never in the API's:
 * DuckDB cannot interrupt every statement, nor count every byte it allocates.
 * Making an instance and its views costs tens of milliseconds (BENCHMARKS.md): small next to the
 * queries this is for, and the price of no state shared between users.
 */

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

/**
 * A Parquet answer cannot be scrubbed: it is read back and refused if any value, as text, holds a
 * folder of the server (the catalog is refused already; this is the net under it).
 */
async function refusePaths(conn: DuckDBConnection, file: string, paths: readonly [string, string][]) {
	const check = await conn.prepare(
		`SELECT count(*) FROM read_parquet(${sqlString(file)}) AS t WHERE ${paths.map((_, i) => `contains(t::VARCHAR, $${i + 1})`).join(" OR ")}`,
	);
	paths.forEach(([path], i) => {
		check.bindVarchar(i + 1, path);
	});
	const found = Number((await check.runAndReadAll()).getRows()[0]?.[0] ?? 0);
	check.destroySync();
	if (found > 0)
		throw new SqlRefusedError(
			400,
			"SQL_FORBIDDEN",
			"the answer holds a folder of this server, which is not served: leave out the values that name it",
		);
}

/** Whether the text has a `;` before its end (trailing ones and blanks aside): where DuckDB may split it. */
const hasSeparator = (sql: string): boolean => sql.replace(/[\s;]+$/, "").includes(";");

const notOneSelect = (type: StatementType) =>
	new SqlRefusedError(
		400,
		"SQL_READ_ONLY",
		`only a read-only SELECT (or WITH ... SELECT, FROM ..., VALUES, DESCRIBE, SUMMARIZE, PIVOT) is run here; this statement is of type ${StatementType[type] ?? type}`,
	);

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
	const paths = serverPaths(lake, out ? { answer: out } : {});
	const instance = await DuckDBInstance.create(":memory:", {
		threads: String(limits.threads),
		memory_limit: limits.memory,
		...NEUTRAL_DIRECTORIES,
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
			throw readFailed(cleanMessage(err, paths));
		}

		// What the text is, by DuckDB's parser: one statement, a SELECT (binding it reads no data).
		// A PIVOT whose values come from the data (no IN list) is parsed into one CREATE TYPE ... AS
		// ENUM (SELECT DISTINCT ...) per pivoted column, then the SELECT that uses them: those
		// statements are the parser's, not the sender's. Only the sender can write a `;`, so a text
		// without one (past a trailing one) is one statement of theirs whatever the count; a text
		// with one is counted as DuckDB splits it (`SELECT 1; SELECT 2` stays refused).
		let extracted: DuckDBExtractedStatements;
		let pivotEnums = 0;
		// Prepared once each: DuckDB takes an extracted statement out of the list when it prepares it.
		const enums: DuckDBPreparedStatement[] = [];
		let type: StatementType | undefined;
		try {
			extracted = await conn.extractStatements(sql);
			const count = extracted.count;
			if (count !== 1 && hasSeparator(sql))
				throw new SqlRefusedError(
					400,
					"SQL_ONE_STATEMENT",
					`the text holds ${count} statements (DuckDB splits it at each ';' outside a comment or string): send exactly one SELECT per request`,
				);
			await refuseIntrospection(conn, sql);
			pivotEnums = count - 1;
			for (let i = 0; i < pivotEnums; i++) {
				const prepared = await extracted.prepare(i);
				enums.push(prepared);
				if (prepared.statementType !== StatementType.CREATE) throw notOneSelect(prepared.statementType);
			}
			// The last statement of a PIVOT binds to the enums the ones before it make: its type is
			// known once they have run (below, within the time limit).
			if (pivotEnums === 0) {
				const prepared = await extracted.prepare(0);
				type = prepared.statementType;
				prepared.destroySync();
			}
		} catch (err) {
			if (err instanceof SqlRefusedError) throw err;
			throw refusal(err, paths, limits);
		}
		if (type !== undefined && type !== StatementType.SELECT) throw notOneSelect(type);
		if (pivotEnums > 0 && out)
			throw new SqlRefusedError(
				400,
				"SQL_INVALID",
				"format=parquet needs a PIVOT's values listed (PIVOT ... ON col IN (v1, v2, ...)); the other formats take it as it is",
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
				await refusePaths(live, target, paths);
				const bytes = await readFile(target);
				if (bytes.length > limits.maxBytes) throw tooLarge(bytes.length, limits);
				return { elapsedMs: performance.now() - started, rows: written, parquet: bytes };
			}
			let select: DuckDBPreparedStatement;
			if (pivotEnums === 0) {
				select = await live.prepare(`SELECT * FROM query($1) LIMIT ${limits.maxRows + 1}`);
				select.bindVarchar(1, sql);
			} else {
				// DuckDB's query() takes no PIVOT without an IN list: its statements run as the parser
				// made them, the enums first (reading data, so within the time limit), then the SELECT,
				// checked as one (the row limit holds below, as the rows come).
				for (const made of enums) await made.run();
				select = await extracted.prepare(pivotEnums);
				if (select.statementType !== StatementType.SELECT) throw notOneSelect(select.statementType);
			}
			const result = await select.stream();
			const types = result.columnTypes();
			const columns = uniqueNames(result.columnNames().map((n) => scrubText(n, paths))).map((name, i) => ({
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
						: chunk.convertColumnValues(i, JsonDuckDBValueConverter).map((v) => scrubValue(v, paths));
				});
				const batch = Array.from({ length: chunk.rowCount }, (_, r) => values.map((v) => v[r] ?? null));
				bytes += (await opts.sink?.rows(batch)) ?? 0;
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
			throw refusal(err, paths, limits);
		} finally {
			clearTimeout(timer);
		}
	} finally {
		conn?.closeSync();
		instance.closeSync();
		if (out) await rm(out, { recursive: true, force: true });
	}
}
