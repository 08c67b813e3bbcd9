import { tableToIPC } from "apache-arrow";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { SqlColumn } from "../../query/sql/result-columns.js";
import type { SqlLimits } from "../../query/sql/sql-limits.js";
import { type SqlProcessResult, sqlProcesses } from "../../query/sql/sql-processes.js";
import { checkSqlText, SqlRefusedError } from "../../query/sql/sql-refusals.js";
import { sqlSlots } from "../../query/sql/sql-slots.js";
import { stringifyExact } from "../answers/records.js";
import { arrowTable, csvCell, joinedBytes } from "../answers/send-list.js";
import { type ApiContext, servedChain } from "../context.js";
import { ApiError } from "../errors.js";
import { documented } from "../params/param-docs.js";
import { chainParams } from "../params/params.js";

/** The SQL endpoint's settings (scripts/serve.ts: --sql, CHAINLAKE_SQL=1, and a flag per limit). */
export interface SqlEndpointOptions {
	enabled: boolean;
	limits: SqlLimits;
}

/**
 * What a statement of `ms` costs its key in the rate limit: every request the key could have
 * sent meanwhile (issue 27: its whole time, however long, the debt carried into later requests).
 * At 50 requests/s a 2 s aggregate costs the key's burst of 100; a statement stopped at 10 s puts
 * the key 400 requests (8 s) in debt. So one key's SQL, sustained, takes at most one slot's time.
 */
export const sqlCharge = (ms: number, perSecond: number) => (ms / 1000) * perSecond;

const FORMATS = ["json", "ndjson", "csv", "arrow", "parquet"] as const;
type SqlFormat = (typeof FORMATS)[number];
const formatParam = documented(z.enum(FORMATS), {
	schema: { type: "string", enum: [...FORMATS] },
	description:
		"The answer's format: JSON `{columns, items, row_count, elapsed_ms}`, NDJSON, CSV, an Arrow IPC stream or Parquet. Default: what the Accept header asks for, else `json`.",
	example: "csv",
});

const MEDIA: Record<SqlFormat, string> = {
	json: "application/json; charset=utf-8",
	ndjson: "application/x-ndjson",
	csv: "text/csv; charset=utf-8",
	arrow: "application/vnd.apache.arrow.stream",
	parquet: "application/vnd.apache.parquet",
};

/** `format=` wins; otherwise the Accept header; JSON by default. */
function sqlFormat(format: SqlFormat | undefined, accept: string | undefined): SqlFormat {
	if (format) return format;
	const a = accept ?? "";
	for (const f of ["ndjson", "csv", "arrow", "parquet"] as const)
		if (a.includes(MEDIA[f].split(";")[0] as string)) return f;
	return "json";
}

/** Builds the answer in one format as the chunks come (sizes counted as they grow). */
function encoder(format: Exclude<SqlFormat, "parquet">) {
	let columns: SqlColumn[] = [];
	const parts: string[] = [];
	const objects: Record<string, unknown>[] = [];
	const object = (row: unknown[]) => Object.fromEntries(columns.map((c, i) => [c.name, row[i]]));
	return {
		sink: {
			columns(cs: SqlColumn[]) {
				columns = cs;
				if (format === "csv") parts.push(`${cs.map((c) => csvCell(c.name)).join(",")}\n`);
			},
			rows(rows: unknown[][]): number {
				let bytes = 0;
				for (const row of rows) {
					let text = "";
					if (format === "json") text = `${parts.length > 0 ? "," : ""}${stringifyExact(object(row))}`;
					else if (format === "ndjson") text = `${stringifyExact(object(row))}\n`;
					else if (format === "csv")
						text = `${row.map((v) => csvCell(v !== null && typeof v === "object" ? stringifyExact(v) : v)).join(",")}\n`;
					else {
						// Arrow: about as large as the values as text.
						objects.push(object(row));
						text = stringifyExact(row);
					}
					if (format !== "arrow") parts.push(text);
					bytes += Buffer.byteLength(text);
				}
				return bytes;
			},
		},
		// (Written straight into one buffer: send-list.ts joinedBytes says why.)
		body(meta: { rows: number; elapsedMs: number }): Buffer {
			if (format === "json")
				return joinedBytes(
					`{"columns":${JSON.stringify(columns.map(({ name, type }) => ({ name, type })))},"items":[`,
					parts,
					"",
					`],"row_count":${meta.rows},"elapsed_ms":${Math.round(meta.elapsedMs)}}`,
				);
			if (format === "arrow") {
				const kinds = new Map(columns.map((c) => [c.name, c.kind]));
				return Buffer.from(
					tableToIPC(
						arrowTable(
							columns.map((c) => c.name),
							objects,
							(c) => kinds.get(c) ?? "text",
						),
						"stream",
					),
				);
			}
			return joinedBytes("", parts, "", "");
		},
	};
}

/**
 * POST /{chain_id}/v1/sql: one read-only SELECT over the chain's datasets as views (the names of
 * `npm run sql`), answered as JSON, NDJSON, CSV, Arrow or Parquet, under hard limits
 * (query/sql/user-sql.ts, each statement in a process of its own: query/sql/sql-processes.ts).
 * Off unless the operator turns it on: arbitrary SQL is the most expensive thing a key can ask
 * for, and it opens every dataset to every key.
 */
export function sqlRoutes(app: FastifyInstance, ctx: ApiContext, opts: SqlEndpointOptions) {
	const r = app.withTypeProvider<ZodTypeProvider>();
	const slots = sqlSlots(opts.limits);
	// Statements run in processes of their own (query/sql/sql-processes.ts says why), started on the first.
	const processes = sqlProcesses(opts.limits);
	app.addHook("onClose", async () => processes.close());
	// UTF-8 JSON may spend up to 6 bytes on a character (\u escapes).
	const bodyLimit = opts.limits.maxLength * 6 + 1024;
	r.post(
		"/:chain_id/v1/sql",
		{
			bodyLimit,
			schema: {
				summary: "SQL over the chain's datasets",
				description:
					'One read-only SELECT over the views blocks, transactions, logs, traces, transfers, contract_creations, self_destructs, token_metadata, token_uris, opening_balances and chunks (data/README.md has their columns; every uint256 column c also has c_d38 DECIMAL(38,0) and c_f64 DOUBLE). Body: the statement as text/plain, or JSON {"sql": "..."}. Answer: JSON {columns, items, row_count, elapsed_ms}, or NDJSON, CSV, Arrow or Parquet by format= or Accept. Limits (time, memory, rows, bytes, length, one statement) answer 400 or 503 saying which. Off unless the server runs with --sql (CHAINLAKE_SQL=1): then 403 SQL_DISABLED. Example: curl -X POST -H "authorization: Bearer $KEY" -H "content-type: text/plain" --data "SELECT count(*) FROM transfers" /eip155-1/v1/sql',
				tags: ["sql"],
				params: chainParams,
				querystring: z.object({ format: formatParam.optional() }).strict(),
			},
		},
		async (req, reply) => {
			if (!opts.enabled)
				throw new ApiError(
					403,
					"SQL_DISABLED",
					"the SQL endpoint is off on this server: its operator turns it on with serve --sql or CHAINLAKE_SQL=1 (README, SQL over HTTP); the list routes answer without it",
				);
			// (Not openChain: the statement runs in a child process, so no Server-Timing of the snapshot's.)
			const db = ctx.store.snapshot(servedChain(ctx, req.params.chain_id));
			if (ctx.remote)
				throw new ApiError(
					503,
					"SQL_UNAVAILABLE",
					"this process reads the lake from a bucket through a cache of the files queries touch, and a statement may touch them all: send SQL to a process that serves the lake's folder",
				);
			const body = req.body as unknown;
			const sql =
				typeof body === "string"
					? body
					: body && typeof body === "object" && typeof (body as { sql?: unknown }).sql === "string"
						? (body as { sql: string }).sql
						: undefined;
			if (sql === undefined)
				throw new ApiError(
					400,
					"SQL_MISSING",
					'send the statement as the body: text/plain, or JSON {"sql": "SELECT ..."}',
				);
			const format = sqlFormat(req.query.format, req.headers.accept);
			try {
				checkSqlText(sql, opts.limits);
			} catch (err) {
				throw toApiError(err);
			}
			const release = await slots.acquire(req.caller).catch((err: unknown) => {
				throw toApiError(err);
			});
			let result: SqlProcessResult;
			const encode = format === "parquet" ? null : encoder(format);
			const started = performance.now();
			const limiter = ctx.limiter;
			try {
				result = await processes.run(
					{ sql, dataDir: ctx.dataDir, manifest: db.manifest(), parquet: format === "parquet" },
					encode?.sink,
				);
			} catch (err) {
				// A statement stopped at a limit used the time too (a bomb cut at the budget most of all).
				limiter?.charge(req.caller, sqlCharge(performance.now() - started, limiter.perSecond));
				throw toApiError(err);
			} finally {
				release();
			}
			// Weighed by the time it held its slot, on top of the request the key already paid.
			const ms = Math.round(result.elapsedMs);
			limiter?.charge(req.caller, sqlCharge(performance.now() - started, limiter.perSecond));
			reply.header("X-Row-Count", String(result.rows)).header("X-Elapsed-Ms", String(ms)).type(MEDIA[format]);
			return result.parquet ?? encode?.body(result);
		},
	);
}

function toApiError(err: unknown): unknown {
	if (err instanceof SqlRefusedError) return new ApiError(err.status, err.code, err.message);
	return err;
}
