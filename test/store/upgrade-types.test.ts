import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { DATASETS } from "../../src/extract/rows.js";
import { createStore } from "../../src/query/store/create-store.js";
import { saveManifest } from "../../src/store/delta/save-manifest.js";
import { createParquetWriter, parquetCopyOptions } from "../../src/store/files/parquet-writer.js";
import { INDEX_NAMES, INDEXES, type IndexDef, REPLACED } from "../../src/store/format/indexes.js";
import { partitionPath } from "../../src/store/format/layout.js";
import { GHOST_DATASET, loadManifest, nextGeneration, rankFiles } from "../../src/store/format/manifest.js";
import { type GhostEntry, type Manifest, METADATA_TABLES } from "../../src/store/format/records.js";
import { NONCE, SCHEMAS } from "../../src/store/format/schema.js";
import { listedPaths } from "../../src/store/indexes/listing.js";
import { reindexChain } from "../../src/store/repair/reindex.js";
import { hasUnsigned, upgradeTypes } from "../../src/store/repair/upgrade-types.js";
import { sqlString } from "../../src/util/sql-string.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { rowsOf } from "../helpers/duck-rows.js";
import { nodeCall } from "../helpers/node-rpc.js";
import { OLD_UNSIGNED_TYPES, rewriteListed } from "../helpers/unsigned-folder.js";

/**
 * Signed column types (src/store/schema.ts: no UBIGINT, UINTEGER or UTINYINT, which Delta Lake,
 * Iceberg and Spark lack or read differently; the blocks' nonce DECIMAL(20,0)), and the upgrade
 * of folders written before (npm run reindex, src/store/upgrade-types.ts).
 *
 * A real backfill of the anvil workload in 4-block partitions (so chunks settle: balance
 * indexes, merged runs, merged chunks, token metadata), with a ghost file added and one block's
 * nonce set past 2^63 as a proof-of-work chain has; its copy rewritten with the old unsigned
 * types (test/helpers/unsigned-folder.ts, checked against a folder the old code wrote) is
 * upgraded, and must come out byte for byte as the current code writes it, answering the same.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const REF = { id: CHAIN_ID, number: CHAIN };
const KEY = "upgrade-key";
/** 2^64 - 1: the largest nonce, past BIGINT and past a double's exact integers. */
const BIG_NONCE = "18446744073709551615";
const BIG_BLOCK = 5;
const UNSIGNED_OR_DOUBLE = /\bU(BIGINT|INTEGER|SMALLINT|TINYINT|HUGEINT)\b/;

let anvil: AnvilInstance;
let work: WorkloadResult;
let root: string;
/** Written by the current code (plus the ghost and the big nonce). */
let fresh: string;
/** The same with the old unsigned types. */
let old: string;
let db: DuckDBInstance;
const ghostHashes: string[] = [];

const q = sqlString;
const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
const manifestOf = (dir: string) => loadManifest(dir, CHAIN_ID, CHAIN);

const rows = (sql: string) => rowsOf(db, sql);
/** A Parquet file's columns and DuckDB types. */
const typesOf = async (path: string) =>
	Object.fromEntries(
		(await rows(`DESCRIBE SELECT * FROM read_parquet(${q(path)})`)).map((r) => [
			String(r.column_name),
			String(r.column_type),
		]),
	);
/** Every Parquet file the manifest lists (no key filters, no lookup databases). */
const parquetFiles = async (dir: string) =>
	[...listedPaths(dir, await manifestOf(dir))].filter((p) => p.endsWith(".parquet")).sort();
/** A listed file's kind and range, without its generation: the same file before and after an upgrade. */
const keyOf = (path: string) =>
	path
		.split("/")
		.slice(-2)
		.join("/")
		.replace(/_g\d+(\.parquet)/, "$1");
/**
 * Every listed file, filters included, by keyOf → sha256; not the lookup databases (the fresh
 * folder's were dropped with its rewrite, rewriteListed, and their bytes are DuckDB's own).
 */
async function contents(dir: string): Promise<Record<string, string>> {
	return Object.fromEntries(
		[...listedPaths(dir, await manifestOf(dir))].filter((p) => !p.endsWith(".duckdb")).map((p) => [keyOf(p), sha(p)]),
	);
}
/** Runs that get a lookup database (none in the old folder: the reindex writes each, one save each). */
const lookupRuns = (m: Manifest) => (m.runs ?? []).filter((r) => (INDEXES[r.index] as IndexDef).lookupDb).length;

async function serve(dir: string) {
	const store = await createStore(dir);
	const app = await buildApp({
		store,
		keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
		dataDir: dir,
	});
	return {
		app,
		async close() {
			await app.close();
			store.close();
		},
	};
}

/** The API's answers (raw bodies: exact integers included) to a fixed set of requests over every kind of file. */
async function answers(app: Awaited<ReturnType<typeof serve>>["app"]): Promise<Record<string, string>> {
	const m = await manifestOf(fresh);
	const blockHash = async (n: number) =>
		String(
			(
				await rows(
					`SELECT hash FROM read_parquet([${m.chunks.map((c) => q(partitionPath(fresh, CHAIN_ID, "blocks", c))).join(", ")}]) WHERE number = ${n}`,
				)
			)[0]?.hash,
		);
	const c = work.contracts;
	const wallets = [...Object.values(work.accounts), c.token20, c.forwarder, `0x${"0".repeat(40)}`];
	const urls = [
		`/${CHAIN_ID}/v1/blocks?block_number_start=0&block_number_end=latest&limit=1000`,
		`/${CHAIN_ID}/v1/blocks/latest`,
		`/${CHAIN_ID}/v1/blocks/${await blockHash(BIG_BLOCK)}`,
		`/${CHAIN_ID}/v1/blocks/${await blockHash(1)}`,
		...ghostHashes.map((h) => `/${CHAIN_ID}/v1/blocks/${h}`),
		...work.txs.slice(0, 6).map((t) => `/${CHAIN_ID}/v1/txs/${t.hash}`),
		`/${CHAIN_ID}/v1/events?contract=${c.token20}&limit=1000`,
		`/${CHAIN_ID}/v1/calls?to=${c.forwarder}&limit=1000`,
		`/${CHAIN_ID}/v1/contracts/creates?caller=${c.factory}`,
		`/${CHAIN_ID}/v1/contract/${c.token721}/transfers?limit=1000`,
		...wallets.flatMap((w) => [
			`/${CHAIN_ID}/v1/address/${w}/transfers?asset_type=native,ft,nft&limit=1000`,
			`/${CHAIN_ID}/v1/address/${w}/txs?include_logs=true&limit=1000`,
			`/balances/${CHAIN_ID}/v1/addresses/${w}/tokens`,
			`/balances/${CHAIN_ID}/v1/addresses/${w}/native`,
			`/nft/${CHAIN_ID}/v1/${w}/inventory`,
		]),
		`/balances/${CHAIN_ID}/v1/tokens/${c.token20}/holders`,
		`/nft/${CHAIN_ID}/v1/${c.token721}/owner`,
		`/nft/${CHAIN_ID}/v1/${c.token1155}/owner`,
	];
	const out: Record<string, string> = {};
	for (const url of urls) {
		const res = await app.inject({ url, headers: { authorization: `Bearer ${KEY}` } });
		expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
		out[url] = res.body;
	}
	return out;
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	work = await runWorkload({ rpcUrl: anvil.url });
	// Blocks enough for the chunks to settle (64 below the tip): balance indexes, runs, metadata.
	await nodeCall(anvil.url, "anvil_mine", ["0x46"]);
	root = await mkdtemp(join(tmpdir(), "chainlake-upgrade-"));
	fresh = join(root, "fresh");
	// (4-block partitions: every kind of entry, in half the entries of 2-block ones; each is written
	// here, rewritten unsigned, and upgraded twice below.)
	await backfillInto(fresh, anvil.url, CHAIN, { traces: "parity", partitionSize: 4 });
	db = await DuckDBInstance.create(":memory:");

	// Ghost blocks: the last chunk's blocks under other hashes, kept as a follower keeps reorged-out ones.
	const m = await manifestOf(fresh);
	const last = m.chunks.at(-1) as Manifest["chunks"][number];
	const ghost: GhostEntry = { from: last.from, to: last.to, last_hash: "", gen: nextGeneration(m), hashes: [] };
	const writer = await createParquetWriter();
	try {
		const source = partitionPath(fresh, CHAIN_ID, "blocks", last);
		const hashSql = `'0x' || repeat('ee', 24) || lpad(printf('%x', number), 16, '0')`;
		await writer.copy(
			`SELECT * REPLACE (${hashSql} AS hash) FROM read_parquet(${q(source)}) ORDER BY number`,
			partitionPath(fresh, CHAIN_ID, GHOST_DATASET, ghost),
			parquetCopyOptions(),
		);
		for (const r of await writer.select(`SELECT ${hashSql} AS h FROM read_parquet(${q(source)}) ORDER BY number`))
			ghostHashes.push(String(r.h));
	} finally {
		writer.close();
	}
	ghost.hashes = [...ghostHashes];
	ghost.last_hash = ghostHashes.at(-1) as string;
	m.ghosts = [ghost];
	await saveManifest(fresh, m);
	// Proof-of-work nonces past 2^63: one canonical block's (in blocks, and in its lookup record:
	// the fourth element, after the number, parent hash and timestamp, none with a comma), and the ghosts'.
	await rewriteListed(fresh, REF, (kind, name) => {
		if (kind === "block_records" && name === "record")
			return `CASE WHEN (record::JSON->>0)::BIGINT = ${BIG_BLOCK} THEN regexp_replace(record, '^(\\[[^,]*,[^,]*,[^,]*,)"[0-9]+"', '\\1"${BIG_NONCE}"') ELSE record END`;
		if (name !== "nonce") return null;
		if (kind === GHOST_DATASET) return `(${BIG_NONCE}::${NONCE} - number)::${NONCE}`;
		return kind === "blocks" || kind === "blocks_by_hash"
			? `CASE WHEN number = ${BIG_BLOCK} THEN ${BIG_NONCE}::${NONCE} ELSE nonce END`
			: null;
	});

	old = join(root, "old");
	await cp(fresh, old, { recursive: true });
	// That code wrote no holder ranks (store/holder-ranks.ts): reindex writes them after the upgrade.
	const oldManifest = await manifestOf(old);
	for (const f of rankFiles(old, oldManifest)) await rm(f);
	await saveManifest(old, { ...oldManifest, ranks: undefined });
	await rewriteListed(old, REF, OLD_UNSIGNED_TYPES);
});

/** Whether a run has an integer column to upgrade (a lookup records run holds text alone: nothing to do). */
const hasIntegers = (r: { index: keyof typeof INDEXES }) => {
	const columns = (INDEXES[r.index] as IndexDef).columns;
	return columns === undefined || Object.values(columns).some((t) => t !== "VARCHAR");
};
const integerRuns = (m: Manifest) => (m.runs ?? []).filter(hasIntegers).length;

afterAll(async () => {
	db?.closeSync();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

describe("signed column types", () => {
	it("are the only integer types of the schemas: datasets, indexes and token metadata", () => {
		const types = [
			...Object.values(SCHEMAS).flatMap((s) => Object.values(s as Record<string, readonly [string, string]>)),
		].map(([t]) => t);
		for (const def of Object.values<IndexDef>(INDEXES)) types.push(...Object.values(def.columns ?? {}));
		for (const t of Object.values(METADATA_TABLES)) types.push(...Object.values<string>(t.columns));
		expect(types.filter((t) => UNSIGNED_OR_DOUBLE.test(t))).toEqual([]);
		expect(SCHEMAS.blocks.nonce[0]).toBe("DECIMAL(20,0)");
	});

	it("are what a backfill writes in every file: datasets, indexes, runs, token metadata", async () => {
		const m = await manifestOf(fresh);
		const files = await parquetFiles(fresh);
		// Every kind of file is there to check.
		const kinds = new Set(files.map((p) => p.split("/").at(-2)));
		const written = INDEX_NAMES.filter((i) => !REPLACED.some(([old]) => old === i));
		for (const k of [...DATASETS, ...written, ...Object.keys(METADATA_TABLES)]) expect(kinds, k).toContain(k);
		expect(m.runs?.length).toBeGreaterThan(0);
		expect(m.metadata?.length).toBeGreaterThan(0);
		for (const path of files) {
			const types = await typesOf(path);
			expect(
				Object.entries(types).filter(([, t]) => UNSIGNED_OR_DOUBLE.test(t)),
				path,
			).toEqual([]);
			if ("nonce" in types && "number" in types) expect(types.nonce, path).toBe("DECIMAL(20,0)");
		}
		// In Parquet terms: no unsigned logical type, and the nonce a real 16-byte decimal, not a DOUBLE.
		const schema = await rows(
			`SELECT name, type, type_length::INT AS len, precision::INT AS precision, scale::INT AS scale, logical_type, converted_type
			 FROM parquet_schema([${files.map(q).join(", ")}])`,
		);
		expect(schema.filter((r) => /UINT/i.test(`${r.converted_type} ${r.logical_type}`))).toEqual([]);
		const nonces = schema.filter((r) => r.name === "nonce" && r.type !== "INT64");
		expect(nonces.length).toBeGreaterThan(0);
		for (const r of nonces)
			expect(r).toMatchObject({
				type: "FIXED_LEN_BYTE_ARRAY",
				len: 16,
				precision: 20,
				scale: 0,
				converted_type: "DECIMAL",
			});
	});

	it("keep the largest 64-bit nonce exact, in DuckDB and in the API's JSON", async () => {
		const blocks = (await parquetFiles(fresh)).filter((p) => p.includes("/blocks/"));
		const [r] = await rows(
			`SELECT nonce::VARCHAR AS nonce, hash FROM read_parquet([${blocks.map(q).join(", ")}]) WHERE number = ${BIG_BLOCK}`,
		);
		expect(r?.nonce).toBe(BIG_NONCE);
		const api = await serve(fresh);
		try {
			const res = await api.app.inject({
				url: `/${CHAIN_ID}/v1/blocks/${r?.hash}`,
				headers: { authorization: `Bearer ${KEY}` },
			});
			expect(res.statusCode).toBe(200);
			expect(res.body).toContain(`"nonce":${BIG_NONCE}`);
			const ghost = await api.app.inject({
				url: `/${CHAIN_ID}/v1/blocks/${ghostHashes[0]}`,
				headers: { authorization: `Bearer ${KEY}` },
			});
			const m = await manifestOf(fresh);
			expect(ghost.body).toContain(`"nonce":${BigInt(BIG_NONCE) - BigInt(m.ghosts?.[0]?.from ?? 0)}`);
			expect(ghost.json()).toMatchObject({ ghost: true });
		} finally {
			await api.close();
		}
	});
});

describe("npm run reindex on a folder written with unsigned types", () => {
	it("is such a folder: unsigned integers in datasets, lists, structs, indexes, deltas and opening balances", async () => {
		const types = async (kind: string) =>
			typesOf((await parquetFiles(old)).find((p) => p.includes(`/${kind}/`)) as string);
		expect(await types("blocks")).toMatchObject({
			number: "UBIGINT",
			nonce: "UBIGINT",
			transaction_count: "UINTEGER",
			withdrawals: 'STRUCT("index" UBIGINT, validator_index UBIGINT, address VARCHAR, amount VARCHAR)[]',
		});
		expect(await types("traces")).toMatchObject({ trace_address: "UINTEGER[]", status: "UTINYINT" });
		expect(await types("wallet_transfers")).toMatchObject({ address: "VARCHAR", block_number: "UBIGINT" });
		expect(await types("erc20_balances")).toMatchObject({ first_block: "UBIGINT", d0: "BIGINT", transfers: "BIGINT" });
		expect(await types("opening_balances")).toMatchObject({ read_at: "UBIGINT" });
		expect(await types("token_metadata")).toMatchObject({ decimals: "INTEGER" });
		expect(await types(GHOST_DATASET)).toMatchObject({ nonce: "UBIGINT" });
	});

	it("rewrites every listed file with signed types, byte for byte as the current code writes it, under new names, and answers the same", async () => {
		const dir = join(root, "upgraded");
		await cp(old, dir, { recursive: true });
		const before = await manifestOf(dir);
		const oldFiles = [...listedPaths(dir, before)];
		const entries =
			before.chunks.length + integerRuns(before) + (before.ghosts?.length ?? 0) + (before.metadata?.length ?? 0);

		// One API instance across the upgrade: it serves the old files, then the new ones.
		const api = await serve(dir);
		let answered: Record<string, string>;
		try {
			answered = await answers(api.app);
			// (They do list things: most wallets' transfers, transactions, balances.)
			expect(Object.values(answered).filter((b) => b.includes('"items":[{')).length).toBeGreaterThan(15);
			const upgraded: string[] = [];
			await reindexChain(dir, REF, undefined, undefined, (what) => upgraded.push(what));
			// One save per entry: every chunk, run, ghost file and metadata set.
			expect(upgraded).toHaveLength(entries);
			expect(upgraded).toContain(`ghost blocks ${before.ghosts?.[0]?.from}..${before.ghosts?.[0]?.to}`);

			const after = await manifestOf(dir);
			// (The others: a save for each block or transaction run's lookup database, and the holder ranks'.)
			expect(lookupRuns(before)).toBeGreaterThan(0);
			expect(after.generation).toBe((before.generation ?? 0) + entries + lookupRuns(before) + 1);
			for (const r of after.runs ?? [])
				expect(r.lookup_db, `${r.index} ${r.from}`).toBe((INDEXES[r.index] as IndexDef).lookupDb);
			// The same entries (ranges, row counts, indexes), each under a generation of the upgrade.
			const strip = (m: Manifest) =>
				JSON.parse(
					JSON.stringify({ ...m, generation: 0, ranks: [] }, (k, v) =>
						k === "gen" ? 0 : k === "lookup_db" ? undefined : v,
					),
				) as unknown;
			expect(strip(after)).toEqual(strip(before));
			// And the holder ranks the old code did not write, as a backfill writes them.
			const freshManifest = await manifestOf(fresh);
			expect(after.ranks?.map((r) => ({ ...r, gen: 0 }))).toEqual(freshManifest.ranks?.map((r) => ({ ...r, gen: 0 })));
			// (A lookup records run holds text alone: it had nothing unsigned and keeps its files.)
			const textOnly = (after.runs ?? []).filter((r) => !hasIntegers(r));
			const gens = [
				...after.chunks,
				...(after.runs ?? []).filter(hasIntegers),
				...(after.ghosts ?? []),
				...(after.metadata ?? []),
			].map((e) => e.gen ?? 0);
			expect(Math.min(...gens)).toBeGreaterThan(before.generation ?? 0);
			// No old file listed any more (they go after the grace period, or at the next writer's start).
			const now = listedPaths(dir, after);
			const kept = new Set(
				listedPaths(dir, { ...after, chunks: [], ghosts: [], metadata: [], ranks: [], runs: textOnly }),
			);
			expect(oldFiles.filter((f) => now.has(f) && !kept.has(f))).toEqual([]);
			for (const f of now) expect(existsSync(f), f).toBe(true);
			// No unsigned type left; the nonce exact.
			for (const path of await parquetFiles(dir)) {
				const types = await typesOf(path);
				expect(
					Object.values(types).filter((t) => hasUnsigned(t)),
					path,
				).toEqual([]);
				if ("nonce" in types && "number" in types) expect(types.nonce, path).toBe(NONCE);
			}
			// What the current code writes, to the byte (row order, row groups, bloom filters, key filters).
			expect(await contents(dir)).toEqual(await contents(fresh));

			// The same answers, exact nonces included, as before the upgrade and as the fresh folder's.
			const upgradedAnswers = await answers(api.app);
			expect(upgradedAnswers).toEqual(answered);
			const ghostOne = upgradedAnswers[`/${CHAIN_ID}/v1/blocks/${ghostHashes[0]}`];
			expect(ghostOne).toContain(`"nonce":${BigInt(BIG_NONCE) - BigInt(before.ghosts?.[0]?.from ?? 0)}`);
			expect(Object.values(upgradedAnswers).some((b) => b.includes(`"nonce":${BIG_NONCE}`))).toBe(true);
		} finally {
			await api.close();
		}
		for (const folder of [fresh, dir]) {
			const other = await serve(folder);
			try {
				expect(await answers(other.app), folder).toEqual(answered);
			} finally {
				await other.close();
			}
		}

		// Again: nothing left to upgrade, no save.
		const upgraded: string[] = [];
		await reindexChain(dir, REF, undefined, undefined, (what) => upgraded.push(what));
		expect(upgraded).toEqual([]);
		expect((await manifestOf(dir)).generation).toBe((before.generation ?? 0) + entries + lookupRuns(before) + 1);
	});

	it("resumes an interrupted upgrade with the entries still unsigned", async () => {
		const dir = join(root, "interrupted");
		await cp(old, dir, { recursive: true });
		const m = await manifestOf(dir);
		const generation = m.generation ?? 0;
		const entries = m.chunks.length + integerRuns(m) + (m.ghosts?.length ?? 0) + (m.metadata?.length ?? 0);
		const writer = await createParquetWriter();
		let saves = 0;
		try {
			await expect(
				upgradeTypes(writer, dir, m, () => {
					if (++saves === 3) throw new Error("stopped");
				}),
			).rejects.toThrow("stopped");
		} finally {
			writer.close();
		}
		// Three entries committed: their files signed, the others' still unsigned.
		const partial = await manifestOf(dir);
		expect(partial.generation).toBe(generation + 3);
		const stillOld = [];
		for (const p of await parquetFiles(dir)) if (Object.values(await typesOf(p)).some(hasUnsigned)) stillOld.push(p);
		expect(stillOld.length).toBeGreaterThan(0);

		const upgraded: string[] = [];
		await reindexChain(dir, REF, undefined, undefined, (what) => upgraded.push(what));
		expect(upgraded).toHaveLength(entries - 3);
		expect(await contents(dir)).toEqual(await contents(fresh));
	});
});
