/**
 * Hostile SQL against POST /{chain}/v1/sql, on the real app over a backfilled anvil chain: every
 * way into another file (the key file, the manifest, a stray file or an unlisted Parquet file in
 * the chain's folder, a symlink out of it, /etc/passwd, a temp file, a URL), every statement that
 * writes, attaches, installs, loads or changes a setting, several statements in one text, and
 * the same pieces shuffled by fast-check, each get a 4xx: never a 200 with a secret in it, never
 * a 5xx, and no file written. Canary strings sit in each file that must stay unread, so a
 * lockdown that let one through would show in an answer. (test/query/lockdown.test.ts covers the
 * API's own DuckDB; this one covers the per-statement instances of query/user-sql.ts.)
 */
import { copyFileSync, existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKey, createKeyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { manifestPath } from "../../src/store/format/layout.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { backfillInto } from "../helpers/anvil-chain.js";

const CHAIN_ID = 31337;
const CHAIN = `eip155-${CHAIN_ID}`;
const SECRETS = {
	keyName: "canary-key-name-7c1f",
	outside: "outside-secret-5a9e",
	inside: "inside-secret-2b7d",
};

let anvil: AnvilInstance;
let dataDir: string;
let outside: string;
let store: Store;
let app: FastifyInstance;
let key: string;
/** Paths that must stay unread, by what they are. */
let paths: Record<string, string>;

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN_ID });
	await fetch(anvil.url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: ["0x5"] }),
	});
	dataDir = await mkdtemp(join(tmpdir(), "chainlake-sql-lockdown-"));
	await backfillInto(dataDir, anvil.url, CHAIN_ID);
	const keysFile = join(dataDir, "_keys.json");
	key = createKey(keysFile, SECRETS.keyName).key;
	outside = await mkdtemp(join(tmpdir(), "chainlake-sql-outside-"));
	await writeFile(join(outside, "secret.csv"), `name,value\n${SECRETS.outside},42\n`);
	await writeFile(join(outside, "secret.json"), `{"secret": "${SECRETS.outside}"}\n`);
	await writeFile(join(dataDir, CHAIN, "notes.csv"), `name,value\n${SECRETS.inside},1\n`);
	// A Parquet file in the chain's folder that no manifest lists (a crashed run's leftover).
	const blocks = join(dataDir, CHAIN, "blocks");
	const listed = join(blocks, readdirSync(blocks).find((f) => f.endsWith(".parquet")) as string);
	await mkdir(join(dataDir, CHAIN, "stray"));
	copyFileSync(listed, join(dataDir, CHAIN, "stray", "blocks_0_9_x.parquet"));
	await symlink(outside, join(dataDir, CHAIN, "escape"));
	paths = {
		keys: keysFile,
		manifest: manifestPath(dataDir, CHAIN),
		notes: join(dataDir, CHAIN, "notes.csv"),
		stray: join(dataDir, CHAIN, "stray", "blocks_0_9_x.parquet"),
		escape: join(dataDir, CHAIN, "escape", "secret.csv"),
		outsideCsv: join(outside, "secret.csv"),
		outsideJson: join(outside, "secret.json"),
		passwd: "/etc/passwd",
		chainGlob: join(dataDir, CHAIN, "**"),
		relative: `${dataDir}/${CHAIN}/../_keys.json`,
	};
	store = await createStore(dataDir);
	app = await buildApp({
		store,
		keyring: createKeyring({ path: keysFile }),
		dataDir,
		sql: { enabled: true, limits: { timeoutMs: 5000 } },
	});
}, 120_000);
afterAll(async () => {
	await app?.close();
	store?.close();
	await anvil?.stop();
	for (const d of [dataDir, outside]) if (d) await rm(d, { recursive: true, force: true });
});

const q = (s: string) => `'${s.replaceAll("'", "''")}'`;

async function post(sql: string) {
	const res = await app.inject({
		method: "POST",
		url: `/${CHAIN}/v1/sql`,
		headers: { authorization: `Bearer ${key}`, "content-type": "text/plain" },
		payload: sql,
	});
	return { status: res.statusCode, text: res.body, code: (res.json() as { code?: string }).code };
}

/** No canary, no key hash, no manifest text in an answer. */
function leaks(text: string): string[] {
	return [...Object.values(SECRETS), "root:x:0:0", '"generation"', '"partition_size"'].filter((s) => text.includes(s));
}

/** Reads of files the statement must not reach, by every table function that reads one. */
function reads(): [string, string][] {
	const out: [string, string][] = [];
	const readers = [
		"read_text",
		"read_blob",
		"read_csv",
		"read_csv_auto",
		"read_json",
		"read_json_auto",
		"read_ndjson",
		"read_parquet",
		"parquet_metadata",
		"parquet_schema",
		"sniff_csv",
		"glob",
	];
	for (const [what, path] of Object.entries(paths))
		for (const fn of readers) out.push([`${fn} of ${what}`, `SELECT * FROM ${fn}(${q(path)})`]);
	return out;
}

const WRITES_AND_SETTINGS: [string, string][] = [
	["COPY to a temp file", `COPY (SELECT 1) TO ${q("/tmp/chainlake-sql-copy.csv")}`],
	["COPY into the lake", "COPY (SELECT 1) TO 'PLACEHOLDER_LAKE/x.parquet' (FORMAT parquet)"],
	["EXPORT DATABASE", `EXPORT DATABASE ${q("/tmp/chainlake-sql-export")}`],
	["ATTACH a file", `ATTACH ${q("/tmp/chainlake-sql-attach.duckdb")} AS x`],
	["ATTACH memory", "ATTACH ':memory:' AS m"],
	["DETACH", "DETACH memory"],
	["USE", "USE memory"],
	["INSTALL", "INSTALL httpfs"],
	["LOAD", "LOAD httpfs"],
	["LOAD a path", `LOAD ${q("/tmp/x.duckdb_extension")}`],
	["SET external access", "SET enable_external_access = true"],
	["SET allowed_paths", `SET allowed_paths = [${q("/etc/passwd")}]`],
	["SET memory", "SET memory_limit = '100GB'"],
	["RESET", "RESET allowed_directories"],
	["PRAGMA setting", "PRAGMA threads = 64"],
	["PRAGMA profiling", "PRAGMA enable_profiling"],
	["CREATE TABLE", "CREATE TABLE t AS SELECT 1 AS x"],
	["CREATE MACRO", "CREATE MACRO m(x) AS x + 1"],
	["CREATE SECRET", "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')"],
	["INSERT", "INSERT INTO chunks VALUES (1, 1, '0x', 'none')"],
	["DROP", "DROP VIEW transfers"],
	["CALL", "CALL pragma_version()"],
	["CHECKPOINT", "CHECKPOINT"],
	["EXPLAIN ANALYZE", "EXPLAIN ANALYZE SELECT 1"],
	["two statements", "SELECT 1; SELECT * FROM read_text('/etc/passwd')"],
	["a statement after a comment", "SELECT 1 -- x\n; SET enable_external_access = true"],
	["query() of a read", `SELECT * FROM query(${q(`SELECT * FROM read_text(${q("/etc/passwd")})`)})`],
	["query() of a SET", `SELECT * FROM query(${q("SET enable_external_access = true")})`],
	["a URL", "SELECT * FROM read_parquet('https://example.com/x.parquet')"],
	["an S3 URL", "SELECT * FROM read_csv('s3://bucket/x.csv')"],
	["a subquery read", `SELECT (SELECT count(*) FROM read_text(${q("/etc/passwd")})) AS n FROM transfers`],
	["a read beside the views", `SELECT * FROM transfers UNION ALL BY NAME SELECT * FROM read_csv(${q("/etc/passwd")})`],
];

describe("hostile SQL at POST /{chain}/v1/sql", () => {
	it("reads the lake's views (the baseline the refusals are measured against)", async () => {
		const res = await post("SELECT count(*) AS n FROM blocks");
		expect(res.status, res.text).toBe(200);
	});

	it("refuses every read of a file the manifest does not list, by every reader, with a 400 and nothing of it", async () => {
		for (const [what, sql] of reads()) {
			const res = await post(sql);
			expect(res.status, `${what}: ${res.text}`).toBe(400);
			// Refused by the lockdown itself, not by some other mistake in the statement.
			expect(res.code, what).toBe("SQL_FORBIDDEN");
			expect(leaks(res.text), what).toEqual([]);
		}
	});

	it("refuses writes, attaches, extensions, settings and several statements, and writes nothing", async () => {
		for (const [what, raw] of WRITES_AND_SETTINGS) {
			const sql = raw.replace("PLACEHOLDER_LAKE", join(dataDir, CHAIN));
			const res = await post(sql);
			expect(res.status, `${what}: ${res.text}`).toBe(400);
			expect(["SQL_FORBIDDEN", "SQL_READ_ONLY", "SQL_ONE_STATEMENT", "SQL_INVALID"], what).toContain(res.code);
			expect(leaks(res.text), what).toEqual([]);
		}
		for (const p of [
			"/tmp/chainlake-sql-copy.csv",
			"/tmp/chainlake-sql-export",
			"/tmp/chainlake-sql-attach.duckdb",
			join(dataDir, CHAIN, "x.parquet"),
		])
			expect(existsSync(p), p).toBe(false);
		// Nothing carried over: the views are still there for the next statement.
		expect((await post("SELECT count(*) AS n FROM transfers")).status).toBe(200);
	});

	it("holds under fuzzing: shuffled readers, paths, wrappers and separators never leak, never 5xx", async () => {
		const readers = fc.constantFrom(
			"read_text",
			"read_blob",
			"read_csv",
			"read_json_auto",
			"read_parquet",
			"glob",
			"parquet_metadata",
			"sniff_csv",
			"query",
		);
		const path = fc.constantFrom(
			...Object.values(paths),
			"/etc/shadow",
			"~/.ssh/id_rsa",
			"../_keys.json",
			"*",
			"**/*.json",
			"/proc/self/environ",
			"http://127.0.0.1:1/x",
		);
		const wrap = fc.constantFrom(
			(r: string) => `SELECT * FROM ${r}`,
			(r: string) => `select (select count(*) from ${r}) as n`,
			(r: string) => `WITH x AS (SELECT * FROM ${r}) SELECT * FROM x`,
			(r: string) => `SELECT * FROM transfers, LATERAL (SELECT * FROM ${r}) t LIMIT 1`,
			(r: string) => `FROM ${r}`,
			(r: string) => `SELECT 1; SELECT * FROM ${r}`,
			(r: string) => `/* c */ SeLeCt * FrOm ${r} -- tail`,
		);
		const read = fc
			.tuple(readers, path, wrap)
			.map(([fn, p, w]) => w(fn === "query" ? `query(${q(`SELECT * FROM read_text(${q(p)})`)})` : `${fn}(${q(p)})`));
		await fc.assert(
			fc.asyncProperty(read, async (sql) => {
				const res = await post(sql);
				expect(res.status, `${sql}: ${res.text}`).toBe(400);
				expect(leaks(res.text), sql).toEqual([]);
			}),
			{ numRuns: 120, seed: 20261125 },
		);
		// Any text at all: an answer or a 4xx, never a 5xx.
		await fc.assert(
			fc.asyncProperty(fc.string({ maxLength: 200 }), async (sql) => {
				const res = await post(sql);
				expect(
					res.status === 200 || (res.status >= 400 && res.status < 500),
					`${JSON.stringify(sql)}: ${res.text}`,
				).toBe(true);
				expect(leaks(res.text)).toEqual([]);
			}),
			{ numRuns: 100, seed: 20261125 },
		);
	});

	it("a listed file gone missing is the lake's fault, not the statement's: 503 SQL_READ_FAILED", async () => {
		const transfers = join(dataDir, CHAIN, "transfers");
		for (const f of readdirSync(transfers).filter((n) => n.endsWith(".parquet"))) await rm(join(transfers, f));
		const res = await post("SELECT count(*) AS n FROM transfers");
		expect(res.status, res.text).toBe(503);
		expect(res.code).toBe("SQL_READ_FAILED");
		expect(leaks(res.text)).toEqual([]);
	});
});
