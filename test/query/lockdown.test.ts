/**
 * The store's DuckDB is confined to the data folder (src/query/lock-down.ts): raw SQL run
 * through the store's own query function cannot read or write any other file, reach the
 * network, attach a database, install or load an extension, or undo the settings, while the
 * dataset queries the API runs keep working. Each refusal must come from the lockdown (its
 * error says so), and a plain DuckDB instance runs the same reads, so the test would notice a
 * lockdown that stopped working.
 */
import { existsSync, readdirSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { DEFAULT_THREADS } from "../../src/query/store/store-options.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { backfillInto } from "../helpers/anvil-chain.js";

const CHAIN_ID = 31337;
const CHAIN = `eip155-${CHAIN_ID}`;
const BLOCKS = 6;

let anvil: AnvilInstance;
let dataDir: string;
/** A folder outside the data folder, with files DuckDB could read if it were not confined. */
let outside: string;
/** A folder next to the data folder whose name starts with the data folder's name. */
let sibling: string;
let store: Store;
/** One of the chain's own Parquet files. */
let parquetInside: string;

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN_ID });
	await fetch(anvil.url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: [`0x${(BLOCKS - 1).toString(16)}`] }),
	});
	dataDir = await mkdtemp(join(tmpdir(), "chainlake-lockdown-"));
	await backfillInto(dataDir, anvil.url, CHAIN_ID);
	const blocksDir = join(dataDir, CHAIN, "blocks");
	parquetInside = join(blocksDir, readdirSync(blocksDir).find((f) => f.endsWith(".parquet")) as string);

	outside = await mkdtemp(join(tmpdir(), "chainlake-outside-"));
	await copyFile(parquetInside, join(outside, "copy.parquet"));
	await writeFile(join(outside, "secret.csv"), "name,value\nsecret,42\n");
	await writeFile(join(outside, "secret.json"), '{"secret": 42}\n');
	sibling = `${dataDir}-sibling`;
	await mkdir(sibling);
	await copyFile(parquetInside, join(sibling, "copy.parquet"));
	// A symlink inside the data folder that leads out of it.
	await symlink(outside, join(dataDir, CHAIN, "escape"));

	store = await createStore(dataDir);
});
afterAll(async () => {
	store?.close();
	await anvil?.stop();
	for (const d of [dataDir, outside, sibling]) if (d) await rm(d, { recursive: true, force: true });
});

const q = (s: string) => `'${s.replaceAll("'", "''")}'`;

const o = (f: string) => q(join(outside, f));

/** Reads of files outside the data folder, by every route into it (SQL built once the files exist). */
function outsideReads(): [string, () => string][] {
	return [
		["read_csv of /etc/passwd", () => "SELECT * FROM read_csv('/etc/passwd')"],
		["read_text of /etc/passwd", () => "SELECT * FROM read_text('/etc/passwd')"],
		["read_blob of /etc/passwd", () => "SELECT * FROM read_blob('/etc/passwd')"],
		["read_csv of a temp file", () => `SELECT * FROM read_csv(${o("secret.csv")})`],
		["read_csv_auto of a temp file", () => `SELECT * FROM read_csv_auto(${o("secret.csv")})`],
		["read_json of a temp file", () => `SELECT * FROM read_json(${o("secret.json")})`],
		["read_text of a temp file", () => `SELECT * FROM read_text(${o("secret.csv")})`],
		["read_parquet of a temp file", () => `SELECT * FROM read_parquet(${o("copy.parquet")})`],
		[
			"read_parquet of a list with one outside file",
			() => `SELECT * FROM read_parquet([${q(parquetInside)}, ${o("copy.parquet")}])`,
		],
		["parquet_metadata of a temp file", () => `SELECT * FROM parquet_metadata(${o("copy.parquet")})`],
		["parquet_schema of a temp file", () => `SELECT * FROM parquet_schema(${o("copy.parquet")})`],
		["a file named in FROM", () => `SELECT * FROM ${o("copy.parquet")}`],
		["glob outside", () => `SELECT * FROM glob(${o("*")})`],
		["glob of /etc", () => "SELECT * FROM glob('/etc/*')"],
		[
			"../ out of the data folder",
			() => `SELECT * FROM read_parquet(${q(`${dataDir}/../${basename(outside)}/copy.parquet`)})`,
		],
		["../ out of a chain folder", () => `SELECT * FROM read_text(${q(`${dataDir}/${CHAIN}/../../../../etc/passwd`)})`],
		[
			"a sibling folder sharing the data folder's prefix",
			() => `SELECT * FROM read_parquet(${q(join(sibling, "copy.parquet"))})`,
		],
		[
			"a symlink in the data folder leading out",
			() => `SELECT * FROM read_parquet(${q(join(dataDir, CHAIN, "escape", "copy.parquet"))})`,
		],
		["a file: URL", () => "SELECT * FROM read_text('file:///etc/passwd')"],
		["a relative path", () => "SELECT * FROM read_text('package.json')"],
		["the home folder", () => "SELECT * FROM read_text('~/.bashrc')"],
	];
}

/** A refusal by the lockdown, not some other failure (a typo in the statement would also fail). */
const REFUSED =
	/Permission Error|disabled by configuration|disabled through configuration|configuration has been locked/;

async function refusal(sql: string): Promise<string> {
	try {
		const rows = await store.query(CHAIN, sql);
		return `ran, ${rows.length} rows: ${JSON.stringify(rows.slice(0, 2), (_k, v) => (typeof v === "bigint" ? String(v) : v)).slice(0, 200)}`;
	} catch (err) {
		return (err as Error).message;
	}
}

async function expectRefused(what: string, sql: string, re: RegExp = REFUSED) {
	const message = await refusal(sql);
	expect(message, `${what}: ${sql}`).toMatch(re);
}

describe("dataset queries still work", () => {
	it("reads the chain's files through {dataset}, in queries and snapshots", async () => {
		const [row] = await store.query(CHAIN, "SELECT count(*)::INT AS n, max(number)::INT AS head FROM {blocks}");
		expect(row).toEqual({ n: BLOCKS, head: BLOCKS - 1 });
		const snap = store.snapshot(CHAIN);
		const rows = await snap.query("SELECT number FROM {blocks} WHERE number BETWEEN $a AND $b ORDER BY number", {
			a: 1,
			b: 3,
		});
		expect(rows.map((r) => Number(r.number))).toEqual([1, 2, 3]);
		// A dataset with no files yet is a typed empty relation, not a file access.
		expect(await snap.query("SELECT count(*)::INT AS n FROM {transfers}")).toEqual([{ n: 0 }]);
	});

	it("reads a file of the data folder named directly", async () => {
		const [row] = await store.query(CHAIN, `SELECT count(*)::INT AS n FROM read_parquet(${q(parquetInside)})`);
		expect(row?.n).toBeGreaterThan(0);
	});
});

describe("control: a DuckDB without the lockdown", () => {
	it("reads every one of those files, so the refusals below are the lockdown's doing", async () => {
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		try {
			const network = /file: URL|home folder|relative path/;
			for (const [what, sql] of outsideReads()) {
				if (network.test(what)) continue;
				await expect(conn.runAndReadAll(sql()), `${what}: ${sql()}`).resolves.toBeDefined();
			}
		} finally {
			conn.closeSync();
			db.closeSync();
		}
	});
});

describe("no file outside the data folder", () => {
	for (const [what, sql] of outsideReads()) {
		it(`refuses ${what}`, async () => {
			await expectRefused(what, sql());
		});
	}

	it("refuses network reads", async () => {
		await expectRefused("http", "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')");
		await expectRefused("https", "SELECT * FROM read_parquet('https://example.com/x.parquet')");
		await expectRefused("s3", "SELECT * FROM read_parquet('s3://bucket/x.parquet')");
	});

	it("refuses writes: COPY TO, EXPORT DATABASE, ATTACH, persistent secrets", async () => {
		const targets = {
			csv: join(outside, "out.csv"),
			parquet: join(outside, "out.parquet"),
			traversal: `${dataDir}/../${basename(outside)}/out2.csv`,
			export: join(outside, "export"),
			attach: join(outside, "attached.duckdb"),
		};
		await expectRefused("COPY TO csv", `COPY (SELECT 1 AS a) TO ${q(targets.csv)}`);
		await expectRefused("COPY TO parquet", `COPY (SELECT 1 AS a) TO ${q(targets.parquet)} (FORMAT parquet)`);
		await expectRefused("COPY TO via ../", `COPY (SELECT 1 AS a) TO ${q(targets.traversal)}`);
		await expectRefused("EXPORT DATABASE", `EXPORT DATABASE ${q(targets.export)}`);
		await expectRefused("ATTACH", `ATTACH ${q(targets.attach)} AS x`);
		await expectRefused("ATTACH read-only /etc/passwd", "ATTACH '/etc/passwd' AS p (READ_ONLY)");
		await expectRefused(
			"CREATE PERSISTENT SECRET",
			"CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
			// No secret type exists without httpfs, which may not be loaded.
			/Permission Error|disabled|persistent secrets|exists in the httpfs extension/i,
		);
		for (const path of Object.values(targets)) expect(existsSync(path), path).toBe(false);
		expect(existsSync(join(outside, "out2.csv"))).toBe(false);
	});

	it("refuses installing and loading extensions", async () => {
		await expectRefused("INSTALL", "INSTALL httpfs");
		await expectRefused("FORCE INSTALL", "FORCE INSTALL httpfs");
		await expectRefused("INSTALL from community", "INSTALL h3 FROM community");
		await expectRefused("LOAD", "LOAD httpfs");
		await expectRefused("LOAD a file", `LOAD ${q(join(outside, "evil.duckdb_extension"))}`);
	});
});

describe("the settings cannot be undone", () => {
	const attempts = [
		"SET enable_external_access = true",
		"SET GLOBAL enable_external_access = true",
		"RESET enable_external_access",
		"SET allowed_directories = ['/']",
		"SET allowed_paths = ['/etc/passwd']",
		"SET lock_configuration = false",
		"SET GLOBAL preserve_insertion_order = false",
		"RESET lock_configuration",
		"SET autoinstall_known_extensions = true",
		"SET autoload_known_extensions = true",
		"SET allow_community_extensions = true",
		"SET allow_unsigned_extensions = true",
		"SET temp_directory = '/tmp'",
		"SET extension_directory = '/tmp'",
		"SET disabled_filesystems = ''",
		"PRAGMA enable_profiling = 'json'",
		"SET profiling_output = ''",
	];
	for (const sql of attempts) {
		it(`refuses ${sql}`, async () => {
			await expectRefused(sql, sql);
		});
	}

	it("keeps Parquet footers in memory, insertion order and one thread a query on every connection of the pool, not only the one that set it", async () => {
		// DuckDB 1.5: a plain SET parquet_metadata_cache holds for its own connection alone, and
		// lockDown's connection closes; read the setting back from the connections queries run on.
		const checks = await Promise.all(
			Array.from({ length: 8 }, () =>
				store.query(
					CHAIN,
					"SELECT current_setting('parquet_metadata_cache') AS cache, current_setting('preserve_insertion_order') AS ordered, current_setting('threads') AS threads",
				),
			),
		);
		for (const [row] of checks) expect(row?.cache).toBe(true);
		// The store's default (store-options.ts DEFAULT_THREADS): the pool runs queries side by side.
		for (const [row] of checks) expect(Number(row?.threads)).toBe(DEFAULT_THREADS);
		// A wallet's pages oldest first take the scan's order (query/list.ts ascending).
		for (const [row] of checks) expect(row?.ordered).toBe(true);
	});

	it("leaves the lockdown in force after all those attempts, on every connection of the pool", async () => {
		// The pool has 4 connections: run enough reads concurrently to go through all of them.
		const checks = await Promise.all(
			Array.from({ length: 8 }, () =>
				store.query(
					CHAIN,
					"SELECT current_setting('enable_external_access') AS ext, current_setting('lock_configuration') AS locked, current_setting('allowed_directories') AS dirs",
				),
			),
		);
		for (const [row] of checks) {
			expect(row?.ext).toBe(false);
			expect(row?.locked).toBe(true);
			expect(row?.dirs).toHaveLength(1);
		}
		await expectRefused("read after attempts", "SELECT * FROM read_text('/etc/passwd')");
		const [row] = await store.query(CHAIN, "SELECT count(*)::INT AS n FROM {blocks}");
		expect(row?.n).toBe(BLOCKS);
	});
});
