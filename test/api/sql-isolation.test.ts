/**
 * The SQL endpoint against one key's worst (issue 27, items 2-4), on the real app over a
 * backfilled anvil workload, statements run in real child processes:
 * - a statement DuckDB cannot interrupt nor count (repeat() of a 1.5 GB string) is stopped at its
 *   process's memory cap, and a slow one at its deadline, with the API process's RSS unmoved;
 * - a victim key is answered within 2 s every time while an attacker key sends bombs on two
 *   connections at once;
 * - no folder of the server in any answer or error: the catalog and settings functions are
 *   refused, what reaches an answer is scrubbed, and a Parquet answer holding one is refused.
 */
import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import type { SqlLimits } from "../../src/query/sql/sql-limits.js";
import { type ApiFixture, startApiOnWorkload, TEST_KEY } from "../helpers/api.js";
import { REPO_ROOT } from "../helpers/cli.js";

const ATTACKER = "attacker-key-0123456789";
let f: ApiFixture;
const apps: FastifyInstance[] = [];

async function appWith(limits: Partial<SqlLimits>) {
	const app = await buildApp({
		store: f.store,
		keyring: createKeyring({ path: join(f.dataDir, "_keys.json"), envKeys: [TEST_KEY, ATTACKER] }),
		dataDir: f.dataDir,
		sql: { enabled: true, limits },
	});
	apps.push(app);
	return app;
}

beforeAll(async () => {
	f = await startApiOnWorkload();
}, 120_000);
afterAll(async () => {
	for (const a of apps) await a.close();
	await f?.close();
});

async function post(app: FastifyInstance, sql: string, opts: { key?: string; format?: string } = {}) {
	const started = performance.now();
	const res = await app.inject({
		method: "POST",
		url: `/${f.chain}/v1/sql${opts.format ? `?format=${opts.format}` : ""}`,
		headers: { authorization: `Bearer ${opts.key ?? TEST_KEY}`, "content-type": "text/plain" },
		payload: sql,
	});
	let body: { code?: string; message?: string } = {};
	try {
		body = res.json();
	} catch {}
	return { status: res.statusCode, body, text: res.body, ms: performance.now() - started };
}

/** The statement of issue 27: 37 s in one call DuckDB cannot interrupt, 1.5 GB its memory_limit does not count. */
const BOMB = "SELECT length(repeat('x', 1500000000)) AS n";
/** The same 1.5 GB built from 1 MB pieces: as uncounted, about 4x faster to allocate (so the cap, not the deadline, stops it). */
const FAST_BOMB = "SELECT length(repeat(repeat('x', 1000000), 1500)) AS n";

describe("statements DuckDB cannot stop", () => {
	it("a 1.5 GB repeat() is stopped at its process's memory cap; the API process does not grow", async () => {
		const app = await appWith({ memory: "512MB", timeoutMs: 14_000 });
		expect((await post(app, "SELECT 1 AS one")).status).toBe(200);
		const before = process.memoryUsage().rss;
		const res = await post(app, FAST_BOMB);
		expect(res.status, res.text).toBe(400);
		expect(res.body.code).toBe("SQL_MEMORY_LIMIT");
		expect(res.body.message).toContain("512MB");
		// Before: 37 s and the API process from 0.41 to 3.4 GB.
		expect(res.ms).toBeLessThan(14_000);
		expect(process.memoryUsage().rss - before).toBeLessThan(100 * 1024 * 1024);
		// Its process was replaced: the next statement is answered.
		expect((await post(app, "SELECT count(*) AS n FROM transfers")).status).toBe(200);
	}, 30_000);

	it("a statement DuckDB cannot interrupt is stopped at its deadline (budget + 1 s), with QUERY_TIMEOUT", async () => {
		// 800 MB of string under a 2 GB cap: ~4 s in one call, past the 500 ms budget.
		const app = await appWith({ memory: "1800MB", timeoutMs: 500 });
		expect((await post(app, "SELECT 1 AS one")).status).toBe(200);
		const res = await post(app, "SELECT length(repeat('xy', 400000000)) AS n");
		expect(res.status, res.text).toBe(503);
		expect(res.body.code).toBe("QUERY_TIMEOUT");
		expect(res.ms).toBeLessThan(2500);
		expect((await post(app, "SELECT 1 AS one")).status).toBe(200);
	}, 30_000);

	it("a victim key is answered within 2 s every time while an attacker key sends bombs on two connections", async () => {
		// Two slots, one a key (the defaults); no rate limit, so the slots alone must hold.
		const app = await appWith({ memory: "512MB", timeoutMs: 1500 });
		await Promise.all([post(app, "SELECT 1 AS one"), post(app, "SELECT 1 AS one", { key: ATTACKER })]);
		const until = performance.now() + 6000;
		const bombs: string[] = [];
		const attack = async () => {
			while (performance.now() < until) bombs.push(String((await post(app, BOMB, { key: ATTACKER })).body.code));
		};
		const victim: number[] = [];
		const attacking = Promise.all([attack(), attack()]);
		while (performance.now() < until) {
			const res = await post(app, "SELECT token_standard, count(*) AS n FROM transfers GROUP BY ALL");
			expect(res.status, res.text).toBe(200);
			victim.push(res.ms);
		}
		await attacking;
		// The issue's statement ends at whichever limit it meets first (the memory cap, or the deadline on a
		// loaded machine, where it allocates slower); the attacker's second connection waits for its first (BUSY once its wait runs out), never taking the victim's slot.
		expect(bombs.filter((c) => c === "SQL_MEMORY_LIMIT" || c === "QUERY_TIMEOUT").length).toBeGreaterThanOrEqual(2);
		expect(
			bombs.every((c) => ["SQL_MEMORY_LIMIT", "QUERY_TIMEOUT", "BUSY"].includes(c)),
			bombs.join(),
		).toBe(true);
		expect(victim.length).toBeGreaterThan(5);
		expect(Math.max(...victim)).toBeLessThan(2000);
	}, 60_000);
});

describe("no folder of the server in an answer or an error", () => {
	let app: FastifyInstance;
	let server: string[];
	beforeAll(async () => {
		app = await appWith({ timeoutMs: 5000 });
		server = [f.dataDir, realpathSync(f.dataDir), homedir(), process.cwd(), REPO_ROOT.replace(/\/$/, "")];
	});
	const leaks = (text: string) => server.filter((p) => text.includes(p));

	it("refuses the catalog and settings functions, however spelt or hidden", async () => {
		for (const sql of [
			"SELECT * FROM duckdb_settings()",
			"SELECT name, value FROM duckdb_settings() WHERE name LIKE '%director%' OR name = 'allowed_paths'",
			"SELECT current_setting('allowed_paths') AS p",
			"SELECT reverse(current_setting('secret_directory')) AS p",
			'SELECT * FROM "DuckDB_Settings"()',
			"WITH s AS (SELECT * FROM duckdb_settings()) SELECT value::BLOB FROM s",
			"SELECT sql FROM duckdb_views()",
			"SELECT view_definition FROM information_schema.views",
			"SELECT sql FROM sqlite_master",
			"SELECT definition FROM pg_catalog.pg_views",
			"SELECT * FROM duckdb_extensions()",
			"SELECT * FROM duckdb_temporary_files()",
			"SELECT * FROM duckdb_databases()",
			"SELECT * FROM pragma_database_list",
			"SELECT * FROM query('SELECT * FROM duckdb_' || 'settings()')",
			"SELECT * FROM query_table('duckdb_settings')",
			"SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT * FROM duckdb_settings()'))",
			"SELECT (SELECT max(value) FROM duckdb_settings()) AS v FROM blocks LIMIT 1",
			// Logging would print every file a statement opens (or write into the server's stdout).
			"SELECT * FROM enable_logging(level = 'trace', storage = 'stdout')",
			"SELECT * FROM duckdb_logs",
		]) {
			const res = await post(app, sql);
			expect(res.status, `${sql}: ${res.text}`).toBe(400);
			expect(res.body.code, sql).toBe("SQL_FORBIDDEN");
			expect(leaks(res.text), sql).toEqual([]);
		}
	});

	it("writes the server's folders as placeholders in answers, column names and errors", async () => {
		const lake = realpathSync(f.dataDir);
		const named = await post(app, `SELECT '${lake}/${f.chain}/x' AS p, '${homedir()}' AS "${lake}"`);
		expect(named.status, named.text).toBe(200);
		expect(leaks(named.text)).toEqual([]);
		expect(named.text).toContain(`<lake>/${f.chain}/x`);
		for (const sql of [
			`SELECT * FROM read_text('${lake}/${f.chain}/_manifest.json')`,
			`SELECT * FROM read_parquet('${lake}/${f.chain}/blocks/none.parquet')`,
			`SELECT * FROM read_parquet('${f.chain}/blocks/*.parquet')`,
			`SELECT * FROM glob('${homedir()}/*')`,
			"SELECT st_point(1, 2)",
			"SELECT * FROM transfers WHERE nothing = 1",
		]) {
			const res = await post(app, sql);
			expect(res.status, `${sql}: ${res.text}`).toBeGreaterThanOrEqual(400);
			expect(res.status, `${sql}: ${res.text}`).toBeLessThan(500);
			expect(leaks(res.text), sql).toEqual([]);
		}
		// A Parquet answer cannot be rewritten: it is refused.
		const parquet = await post(app, `SELECT '${lake}' AS p`, { format: "parquet" });
		expect(parquet.status, parquet.text).toBe(400);
		expect(parquet.body.code).toBe("SQL_FORBIDDEN");
		expect(leaks(parquet.text)).toEqual([]);
		// The same for CSV and Arrow, whose bytes come from the same scrubbed values.
		for (const format of ["csv", "ndjson", "arrow"]) {
			const res = await post(app, `SELECT '${lake}' AS p`, { format });
			expect(res.status, format).toBe(200);
			expect(leaks(res.text), format).toEqual([]);
		}
	});
});
