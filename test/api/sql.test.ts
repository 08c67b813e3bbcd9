/**
 * POST /{chain}/v1/sql on the real app over a backfilled anvil workload: answers in every format
 * equal what the lake holds, the numeric forms of uint256 columns sort and sum right, and each
 * hard limit (length, one statement, rows, bytes, time, memory, concurrency) answers its 4xx or
 * 503. Hostile SQL is in sql-lockdown.test.ts.
 */

import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { Type, tableFromIPC } from "apache-arrow";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { SQL_FLAG_OPTIONS, sqlFlags } from "../../src/api/sql-flags.js";
import { DEFAULT_SQL_LIMITS, type SqlLimits } from "../../src/query/sql/sql-limits.js";
import { sqlSlots } from "../../src/query/sql/sql-slots.js";
import { type ApiFixture, AUTH, startApiOnWorkload, TEST_KEY } from "../helpers/api.js";

let f: ApiFixture;
/** Apps over the same lake with the SQL endpoint on, by their limits. */
const apps: FastifyInstance[] = [];
let sqlApp: FastifyInstance;

async function appWith(
	limits: Partial<SqlLimits> = {},
	extra: Parameters<typeof buildApp>[0] extends infer O ? Partial<O> : never = {},
) {
	const app = await buildApp({
		store: f.store,
		keyring: createKeyring({ path: join(f.dataDir, "_keys.json"), envKeys: [TEST_KEY] }),
		dataDir: f.dataDir,
		// One slot: each app starts one SQL process, not one a slot (npm test's time).
		sql: { enabled: true, limits: { concurrency: 1, ...limits } },
		...extra,
	});
	apps.push(app);
	return app;
}

beforeAll(async () => {
	f = await startApiOnWorkload();
	sqlApp = await appWith();
}, 120_000);
afterAll(async () => {
	for (const a of apps) await a.close();
	await f?.close();
});

/** POSTs `sql` as text/plain; the answer's status, parsed body (JSON when it is) and headers. */
async function post(sql: string, opts: { app?: FastifyInstance; format?: string; json?: boolean } = {}) {
	const res = await (opts.app ?? sqlApp).inject({
		method: "POST",
		url: `/${f.chain}/v1/sql${opts.format ? `?format=${opts.format}` : ""}`,
		headers: { ...AUTH, "content-type": opts.json ? "application/json" : "text/plain" },
		payload: opts.json ? JSON.stringify({ sql }) : sql,
	});
	let body: Record<string, unknown> = {};
	try {
		body = res.json();
	} catch {}
	return { status: res.statusCode, body, headers: res.headers, raw: res.rawPayload, text: res.body };
}

type SqlJson = { columns: { name: string; type: string }[]; items: Record<string, unknown>[]; row_count: number };

describe("POST /{chain}/v1/sql", () => {
	it("is off unless turned on: 403 SQL_DISABLED saying how", async () => {
		const res = await post("SELECT 1", { app: f.app });
		expect(res.status).toBe(403);
		expect(res.body).toMatchObject({ code: "SQL_DISABLED" });
		expect(String(res.body.message)).toContain("CHAINLAKE_SQL=1");
	});

	it("needs a key, like every data route", async () => {
		const res = await sqlApp.inject({ method: "POST", url: `/${f.chain}/v1/sql`, payload: "SELECT 1" });
		expect(res.statusCode).toBe(401);
	});

	it("answers a SELECT over the views, as JSON with typed columns, from text or a JSON body", async () => {
		const transfers = f.work.expected.transfers.length;
		for (const json of [false, true]) {
			const res = await post(
				"SELECT count(*) AS n, count(DISTINCT token_standard) AS standards, max(block_number) AS last FROM transfers",
				{ json },
			);
			expect(res.status, res.text).toBe(200);
			const body = res.body as unknown as SqlJson;
			expect(body.columns).toEqual([
				{ name: "n", type: "BIGINT" },
				{ name: "standards", type: "BIGINT" },
				{ name: "last", type: "BIGINT" },
			]);
			expect(body.items).toEqual([{ n: transfers, standards: 4, last: expect.any(Number) }]);
			expect(body.row_count).toBe(1);
			expect(res.headers["x-row-count"]).toBe("1");
		}
	});

	it("answers the same rows as NDJSON, CSV, Arrow (typed) and Parquet", async () => {
		const sql =
			"SELECT block_number, transaction_hash, token_standard, value, value_d38, value_f64, token_standard = 'erc20' AS is_erc20, batch_values FROM transfers ORDER BY id";
		const json = (await post(sql)).body as unknown as SqlJson;
		expect(json.items.length).toBe(f.work.expected.transfers.length);

		const nd = await post(sql, { format: "ndjson" });
		expect(nd.headers["content-type"]).toContain("application/x-ndjson");
		expect(
			nd.text
				.trim()
				.split("\n")
				.map((l) => JSON.parse(l)),
		).toEqual(json.items);

		const csv = await post(sql, { format: "csv" });
		const lines = csv.text.trim().split("\n");
		expect(lines[0]).toBe(json.columns.map((c) => c.name).join(","));
		expect(lines.length).toBe(json.items.length + 1);
		expect(lines[1]?.split(",")[3]).toBe(String(json.items[0]?.value ?? ""));

		const arrow = await post(sql, { format: "arrow" });
		const table = tableFromIPC(arrow.raw);
		const types = Object.fromEntries(table.schema.fields.map((fl) => [fl.name, fl.type.typeId]));
		expect(types).toEqual({
			block_number: Type.Int,
			transaction_hash: Type.Utf8,
			token_standard: Type.Utf8,
			value: Type.Utf8,
			value_d38: Type.Utf8, // DECIMAL: exact text
			value_f64: Type.Float,
			is_erc20: Type.Bool,
			batch_values: Type.Utf8, // a list: JSON text
		});
		expect(table.numRows).toBe(json.items.length);
		const rows = table.toArray().map((r) => r.toJSON());
		for (const [i, item] of json.items.entries()) {
			expect(Number(rows[i]?.block_number)).toBe(item.block_number);
			expect(rows[i]?.value).toBe(item.value);
			expect(rows[i]?.is_erc20).toBe(item.is_erc20);
		}

		const parquet = await post(sql, { format: "parquet" });
		expect(parquet.status).toBe(200);
		expect(parquet.raw.subarray(0, 4).toString()).toBe("PAR1");
		const file = join(tmpdir(), `chainlake-sql-answer-${process.pid}.parquet`);
		await writeFile(file, parquet.raw);
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		const back = (await conn.runAndReadAll(`SELECT value FROM read_parquet('${file}')`)).getRowObjectsJson();
		conn.closeSync();
		db.closeSync();
		expect(back.map((r) => r.value)).toEqual(json.items.map((i) => i.value));
	});

	it("adds numeric forms of uint256 columns that sort and sum right, where the text does not", async () => {
		const all = (
			(await post("SELECT value FROM transfers WHERE value IS NOT NULL")).body as unknown as SqlJson
		).items.map((r) => BigInt(r.value as string));
		const largest = [...all].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).at(-1) ?? 0n;
		const fits = all.filter((v) => v < 10n ** 38n);
		const res = await post(
			"SELECT arg_max(value, value_f64) AS largest, max(value) AS largest_as_text, sum(value_d38) AS total_d38, count(value_d38) AS counted FROM transfers",
		);
		const row = (res.body as unknown as SqlJson).items[0] as Record<string, unknown>;
		expect(row.largest).toBe(largest.toString());
		// The workload moves amounts of different lengths: as text, the largest is another one.
		expect(row.largest_as_text).not.toBe(largest.toString());
		expect(row.total_d38).toBe(fits.reduce((a, b) => a + b, 0n).toString());
		expect(row.counted).toBe(fits.length);
		expect(fits.length).toBeLessThan(all.length); // some amounts are past 10^38: d38 is null there
	});

	it("answers DuckDB's mistakes as 400 SQL_INVALID naming the views", async () => {
		const res = await post("SELECT * FROM transferz");
		expect(res.status).toBe(400);
		expect(res.body).toMatchObject({ code: "SQL_INVALID" });
		expect(String(res.body.message)).toContain("transfers");
		const syntax = await post("SELEC 1");
		expect(syntax.status).toBe(400);
		expect(syntax.body).toMatchObject({ code: "SQL_INVALID" });
		expect((await post("")).body).toMatchObject({ code: "SQL_MISSING" });
	});
});

describe("the SQL endpoint's hard limits", () => {
	it("statement length: 400 SQL_TOO_LONG", async () => {
		const app = await appWith({ maxLength: 100 });
		const res = await post(`SELECT ${"1 + ".repeat(40)}1`, { app });
		expect(res.status).toBe(400);
		expect(res.body).toMatchObject({ code: "SQL_TOO_LONG" });
		// A body far past it is refused before it is read, with the same advice.
		const huge = await post(`SELECT '${"x".repeat(10_000)}'`, { app });
		expect(huge.status).toBe(413);
		expect(String(huge.body.message)).toContain("at most 100 characters");
	});

	it("one statement only: 400 SQL_ONE_STATEMENT", async () => {
		const res = await post("SELECT 1; SELECT 2");
		expect(res.status).toBe(400);
		expect(res.body).toMatchObject({ code: "SQL_ONE_STATEMENT" });
	});

	it("a PIVOT over values from the data is one statement (DuckDB parses it into enums + SELECT); two real ones stay refused", async () => {
		// Issue 27: refused as "2 statements" before. DuckDB turns it into CREATE TYPE ... AS ENUM
		// (one per pivoted column) and the SELECT over them.
		const expected = Object.fromEntries(
			(
				(await post("SELECT asset_type, count(*)::BIGINT AS n FROM transfers GROUP BY ALL")).body as unknown as SqlJson
			).items.map((r) => [String(r.asset_type), Number(r.n)]),
		);
		expect(Object.keys(expected).length).toBeGreaterThan(1);
		for (const sql of [
			"PIVOT (SELECT asset_type FROM transfers) ON asset_type USING count(*)",
			"WITH p AS (PIVOT (SELECT asset_type FROM transfers) ON asset_type USING count(*)) SELECT * FROM p;",
		]) {
			const res = await post(sql);
			expect(res.status, `${sql}: ${res.text}`).toBe(200);
			const [row] = (res.body as unknown as SqlJson).items;
			expect(Object.fromEntries(Object.entries(row ?? {}).map(([k, v]) => [k, Number(v)])), sql).toEqual(expected);
		}
		// Two statements of the sender's (a `;` between them) are still two, PIVOT or not.
		for (const sql of [
			"PIVOT (SELECT asset_type FROM transfers) ON asset_type USING count(*); SELECT 1",
			"SELECT 1; PIVOT (SELECT asset_type FROM transfers) ON asset_type USING count(*)",
			"CREATE TYPE e AS ENUM ('a'); SELECT 1",
		]) {
			const res = await post(sql);
			expect(res.status, sql).toBe(400);
			expect(res.body, sql).toMatchObject({ code: "SQL_ONE_STATEMENT" });
			expect(String(res.body.message)).toContain("send exactly one SELECT per request");
		}
		// One statement that is not a SELECT, though DuckDB adds the PIVOT's enums before it.
		const create = await post(
			"CREATE TABLE x AS PIVOT (SELECT asset_type FROM transfers) ON asset_type USING count(*)",
		);
		expect(create.status).toBe(400);
		expect(create.body).toMatchObject({ code: "SQL_READ_ONLY" });
		const copy = await post("COPY (PIVOT (SELECT asset_type FROM transfers) ON asset_type USING count(*)) TO 'x.csv'");
		expect(copy.status).toBe(400);
		expect(["SQL_READ_ONLY", "SQL_FORBIDDEN"]).toContain(copy.body.code);
		// The catalog stays refused inside a PIVOT (DuckDB cannot serialize one: a search of the text).
		const catalog = await post("PIVOT (SELECT name FROM duckdb_settings()) ON name USING count(*)");
		expect(catalog.body).toMatchObject({ code: "SQL_FORBIDDEN" });
		// Parquet answers go through DuckDB's query(), which takes no such PIVOT: said how to write it.
		const parquet = await post("PIVOT (SELECT asset_type FROM transfers) ON asset_type USING count(*)", {
			format: "parquet",
		});
		expect(parquet.status).toBe(400);
		expect(String(parquet.body.message)).toContain("ON col IN (v1, v2, ...)");
		const listed = await post(
			`PIVOT (SELECT asset_type FROM transfers) ON asset_type IN (${Object.keys(expected)
				.map((k) => `'${k}'`)
				.join(", ")}) USING count(*)`,
			{ format: "parquet" },
		);
		expect(listed.status, listed.text).toBe(200);
	});

	it("rows: 400 RESULT_TOO_LARGE past the limit, and exactly at it an answer", async () => {
		const app = await appWith({ maxRows: 1000 });
		expect((await post("SELECT * FROM range(1000)", { app })).status).toBe(200);
		const res = await post("SELECT * FROM range(1001)", { app });
		expect(res.status).toBe(400);
		expect(res.body).toMatchObject({ code: "RESULT_TOO_LARGE" });
		const parquet = await post("SELECT * FROM range(1001)", { app, format: "parquet" });
		expect(parquet.body).toMatchObject({ code: "RESULT_TOO_LARGE" });
	});

	it("bytes: 400 RESPONSE_TOO_LARGE", async () => {
		const app = await appWith({ maxBytes: 10_000 });
		for (const format of ["json", "csv", "arrow", "parquet"]) {
			// Hashes: text Parquet's compression cannot shrink below the limit.
			const res = await post("SELECT md5(range::VARCHAR) || md5((range + 1)::VARCHAR) AS x FROM range(2000)", {
				app,
				format,
			});
			expect(res.status, format).toBe(400);
			expect(res.body, format).toMatchObject({ code: "RESPONSE_TOO_LARGE" });
		}
	});

	it("time: a recursive CTE and a cross-join bomb are stopped at the budget, 503 QUERY_TIMEOUT", async () => {
		const app = await appWith({ timeoutMs: 1500 });
		for (const bomb of [
			"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
			"SELECT count(*) FROM range(100000) a, range(100000) b, range(100000) c",
			"SELECT sum(a.block_number * b.block_number + c.block_number - d.block_number * h.block_number) FROM transfers a, transfers b, transfers c, transfers d, transfers e, transfers f, transfers g, transfers h",
		]) {
			const started = performance.now();
			const res = await post(bomb, { app });
			expect(res.status, bomb).toBe(503);
			expect(res.body, bomb).toMatchObject({ code: "QUERY_TIMEOUT" });
			expect(performance.now() - started, bomb).toBeLessThan(15_000);
		}
		// And the process answers on.
		expect((await post("SELECT 1 AS one", { app })).status).toBe(200);
	});

	it("memory: 400 SQL_MEMORY_LIMIT past the statement's memory", async () => {
		const app = await appWith({ memory: "64MB", timeoutMs: 30_000 });
		const res = await post(
			"SELECT count(DISTINCT x) FROM (SELECT range::VARCHAR || 'padding-padding' AS x FROM range(20000000))",
			{
				app,
			},
		);
		expect(res.status, res.text).toBe(400);
		expect(res.body).toMatchObject({ code: "SQL_MEMORY_LIMIT" });
		expect(String(res.body.message)).toContain("64MB");
	});

	it("concurrency: a statement that cannot start within its budget is refused as busy", async () => {
		const slots = sqlSlots({ ...DEFAULT_SQL_LIMITS, concurrency: 1, timeoutMs: 200 });
		const first = await slots.acquire();
		await expect(slots.acquire()).rejects.toMatchObject({ status: 503, code: "BUSY" });
		const waiting = slots.acquire();
		first();
		const second = await waiting;
		second();
	});

	it("concurrency per key: one key cannot hold every slot; its next statement waits for its own, others go first", async () => {
		const slots = sqlSlots({ ...DEFAULT_SQL_LIMITS, concurrency: 2, keyConcurrency: 1, timeoutMs: 300 });
		const a1 = await slots.acquire("a");
		// The second slot is free, but not for a: it waits for its own statement (BUSY past its wait).
		await expect(slots.acquire("a")).rejects.toMatchObject({ status: 503, code: "BUSY", message: /this API key/ });
		const queued = slots.acquire("a");
		const b1 = await slots.acquire("b");
		expect([slots.running(), slots.running("a"), slots.running("b")]).toEqual([2, 1, 1]);
		// c waits behind a's queued statement, but a is at its limit: b's slot goes to c.
		const c = slots.acquire("c");
		b1();
		(await c)();
		a1();
		(await queued)();
		expect(slots.running()).toBe(0);
	});

	it("charges a statement's whole time to the key's rate limit: every request it could have sent meanwhile", async () => {
		const app = await appWith({ timeoutMs: 30_000 }, { rateLimit: { perSecond: 20, burst: 1000 } });
		const started = performance.now();
		const res = await post("SELECT count(*) FROM range(200000000) a WHERE a.range % 7 = 3", { app });
		const held = performance.now() - started;
		expect(res.status, res.text).toBe(200);
		const after = Number(
			(await app.inject({ url: `/${f.chain}/v1/blocks/latest`, headers: AUTH })).headers["x-ratelimit-remaining"],
		);
		// 1000, less the statement's request and its time (20 requests a second), less the request that asked.
		const cost = (held / 1000) * 20;
		expect(after).toBeLessThanOrEqual(Math.ceil(1000 - 2 - cost * 0.8));
		expect(after).toBeGreaterThanOrEqual(Math.floor(1000 - 2 - cost - 1));
		expect(Number(res.headers["x-elapsed-ms"])).toBeGreaterThan(100);
	});

	it("charges a statement stopped at its time budget for the time it used, debt past the burst carried over", async () => {
		const app = await appWith({ timeoutMs: 1000 }, { rateLimit: { perSecond: 20, burst: 5 } });
		const res = await post("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r", {
			app,
		});
		expect(res.status).toBe(503);
		// At least its 1 s budget (20 requests) against a burst of 5: the key is about 15 requests in debt.
		const next = await app.inject({ url: `/${f.chain}/v1/blocks/latest`, headers: AUTH });
		expect(next.statusCode).toBe(429);
		expect(Number(next.headers["retry-after"])).toBeGreaterThanOrEqual(1);
		expect(next.headers["x-ratelimit-remaining"]).toBe("0");
	});
});

describe("serve's SQL flags", () => {
	const defaults = { timeoutMs: 10_000, maxBytes: 1024, threads: 2 };
	// What parseArgs gives with no flag (SQL_FLAG_OPTIONS' defaults).
	const none = Object.fromEntries(Object.entries(SQL_FLAG_OPTIONS).map(([k, o]) => [k, o.default]));
	it("are off by default, on with --sql, with the documented limits", () => {
		expect(sqlFlags(none, defaults)).toEqual({ enabled: false, limits: { ...DEFAULT_SQL_LIMITS, ...defaults } });
		const on = sqlFlags(
			{ sql: true, "sql-memory": "256MB", "sql-max-rows": "10", "sql-max-length": "100", "sql-concurrency": "2" },
			defaults,
		);
		expect(on).toEqual({
			enabled: true,
			limits: {
				timeoutMs: 10_000,
				memory: "256MB",
				maxRows: 10,
				maxBytes: 1024,
				maxLength: 100,
				concurrency: 2,
				keyConcurrency: 1,
				threads: 2,
			},
		});
	});

	it("name the flag to fix", () => {
		const base = { "sql-memory": "256MB", "sql-max-rows": "10", "sql-max-length": "100", "sql-concurrency": "1" };
		expect(() => sqlFlags({ ...base, "sql-timeout-ms": "60000" }, defaults)).toThrow(/--sql-timeout-ms .* 1 to 14000/);
		expect(() => sqlFlags({ ...base, "sql-memory": "lots" }, defaults)).toThrow(/--sql-memory/);
		expect(() => sqlFlags({ ...base, "sql-max-rows": "0" }, defaults)).toThrow(/--sql-max-rows/);
		expect(() => sqlFlags({ ...base, "sql-concurrency": "x" }, defaults)).toThrow(/--sql-concurrency/);
		expect(() => sqlFlags({ ...base, "sql-concurrency": "2", "sql-key-concurrency": "3" }, defaults)).toThrow(
			/--sql-key-concurrency .* 1 to 2/,
		);
		expect(sqlFlags({ ...base, "sql-concurrency": "8" }, defaults).limits.keyConcurrency).toBe(4);
		expect(
			sqlFlags({ ...base, "sql-concurrency": "8", "sql-key-concurrency": "7" }, defaults).limits.keyConcurrency,
		).toBe(7);
	});
});
