import { mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStore } from "../../src/query/store/create-store.js";
import { findTransactionWithLogs, findWalletTransactions } from "../../src/query/transactions.js";
import { findTransfers } from "../../src/query/transfers.js";
import { createParquetWriter } from "../../src/store/files/parquet-writer.js";
import { writeSmallGroups } from "../../src/store/files/small-groups.js";
import { INDEXES } from "../../src/store/format/indexes.js";
import { partOf, partPaths, partsIn } from "../../src/store/format/key-parts.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import type { Manifest } from "../../src/store/format/records.js";
import { filterPath, loadKeyFilter } from "../../src/store/indexes/key-filter.js";
import { indexFiles, listedPaths } from "../../src/store/indexes/listing.js";
import { isCoarse, sharesBusyPart } from "../../src/store/repair/coarse-indexes.js";
import { reindexChain } from "../../src/store/repair/reindex.js";
import { verifyChain } from "../../src/store/repair/verify.js";
import type { Scale } from "../../src/synth/scales.js";
import { writeSynthChain } from "../../src/synth/synth.js";
import { parseChainId } from "../../src/util/chain.js";
import { sqlString } from "../../src/util/sql-string.js";
import { rowsOf } from "../helpers/duck-rows.js";

/**
 * Index files written in larger row groups than this version writes (the by-address indexes
 * before issue 26: 16,384 rows a group; then 2,048; now 512): they still answer, and `npm run reindex`
 * writes them again in this version's row groups and key-range parts (src/store/repair/coarse-indexes.ts),
 * with the same answers, verify clean, and nothing to do on a second run.
 */
const SCALE: Scale = { blocks: 250, accounts: 800, contracts: 20, factories: 3, partitionSize: 250 };
const CHAIN = parseChainId("eip155-1");
const BY_ADDRESS = ["wallet_transfers", "wallet_transactions"] as const;
let root: string;
let db: DuckDBInstance;

const q = sqlString;
const select = (sql: string) => rowsOf(db, sql);
const largestGroup = async (path: string) =>
	Number((await select(`SELECT max(row_group_num_rows) AS n FROM parquet_metadata(${q(path)})`))[0]?.n);
const byAddressFiles = (m: Manifest) =>
	BY_ADDRESS.flatMap((index) => indexFiles(root, m, index).map((f) => ({ index, ...f })));

/** Every wallet page the by-address indexes answer, for the busiest addresses. */
async function answers(addresses: string[]) {
	const store = await createStore(root);
	try {
		const out: unknown[] = [];
		const page = { start: 0, end: SCALE.blocks, limit: 50, order: "desc" as const };
		for (const address of addresses) {
			out.push(await findTransfers(store.snapshot(CHAIN.id), { address }, page));
			out.push(await findWalletTransactions(store.snapshot(CHAIN.id), { address }, page));
		}
		return JSON.stringify(out, (_, v) => (typeof v === "bigint" ? v.toString() : v));
	} finally {
		store.close();
	}
}

/** After a reindex that left the manifest at `generation`: verify finds nothing, and a second run writes nothing. */
/** The busiest key a wallet_transfers key filter of `m` records with its rows, and that file. */
async function busiestKey(m: Manifest): Promise<{ key: string; rows: number; path: string }> {
	let busy: { key: string; rows: number; path: string } | undefined;
	for (const f of indexFiles(root, m, "wallet_transfers"))
		for (const [key, b] of (await loadKeyFilter(filterPath(f.path))).busyRows ?? [])
			if (!busy || b.rows > busy.rows) busy = { key, rows: b.rows, path: f.path };
	expect(busy, "a busy key in the fixture").toBeDefined();
	return busy as { key: string; rows: number; path: string };
}

async function expectCleanAndDone(generation: number | undefined) {
	expect((await verifyChain(root, CHAIN.id)).problems).toEqual([]);
	await reindexChain(root, CHAIN);
	expect((await loadManifest(root, CHAIN.id, CHAIN.number)).generation).toBe(generation);
}

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), "chainlake-coarse-"));
	db = await DuckDBInstance.create(":memory:");
	await writeSynthChain({ scale: SCALE, chain: CHAIN, dataDir: root, partitionSize: SCALE.partitionSize });
	// As an older version wrote them: each part of each by-address file rewritten in row groups of
	// 16,384 rows, same rows, same order, same name.
	const conn = await db.connect();
	try {
		for (const f of byAddressFiles(await loadManifest(root, CHAIN.id, CHAIN.number)))
			for (const part of partPaths(f.path, f.parts)) {
				await conn.run(
					`COPY (SELECT * FROM read_parquet(${q(part)})) TO ${q(`${part}.old`)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 16384)`,
				);
				await rename(`${part}.old`, part);
			}
	} finally {
		conn.closeSync();
	}
}, 180_000);

afterAll(async () => {
	db?.closeSync();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("index files in coarser row groups than this version writes", () => {
	it("are read as they are, then rewritten by reindex in this version's row groups, answering the same", async () => {
		const before = await loadManifest(root, CHAIN.id, CHAIN.number);
		const old = byAddressFiles(before);
		expect(old.length).toBeGreaterThan(0);
		// The fixture is only a fixture if some file has a group past today's size.
		const groups = await Promise.all(old.map((f) => largestGroup(f.path)));
		expect(Math.max(...groups)).toBeGreaterThan(2 * INDEXES.wallet_transfers.rowGroupSize);
		const busiest = (
			await select(
				`SELECT address FROM read_parquet([${old
					.filter((f) => f.index === "wallet_transfers")
					.map((f) => q(f.path))
					.join(", ")}]) GROUP BY address ORDER BY count(*) DESC, address LIMIT 5`,
			)
		).map((r) => String(r.address));
		const answered = await answers(busiest);

		// Parts of 8,192 rows: the regrouped files split anew into more key-range parts than they had.
		process.env.CHAINLAKE_PART_ROWS = "8192";
		try {
			await reindexChain(root, CHAIN);
		} finally {
			delete process.env.CHAINLAKE_PART_ROWS;
		}
		const after = await loadManifest(root, CHAIN.id, CHAIN.number);
		const now = byAddressFiles(after);
		// Every chunk indexed again, under new names, each part in today's row groups.
		expect(now.length).toBeGreaterThanOrEqual(old.length);
		for (const f of now) {
			expect(old.map((o) => o.path)).not.toContain(f.path);
			// (The small-groups writer caps its groups exactly.)
			for (const part of partPaths(f.path, f.parts))
				expect(await largestGroup(part)).toBeLessThanOrEqual(INDEXES[f.index].rowGroupSize);
		}
		expect(Math.max(...now.map((f) => f.parts))).toBeGreaterThan(1);
		expect(await answers(busiest)).toBe(answered);
		const report = await verifyChain(root, CHAIN.id);
		expect(report.manifestError).toBeNull();
		expect(report.problems).toEqual([]);
		// A second run finds nothing coarse.
		const gen = after.generation;
		await reindexChain(root, CHAIN);
		expect((await loadManifest(root, CHAIN.id, CHAIN.number)).generation).toBe(gen);
		// The coarse files are no longer listed (retired: deleted once no reader can hold them).
		const listed = listedPaths(root, after);
		for (const f of old) expect(listed.has(f.path)).toBe(false);
	}, 180_000);

	it("are rewritten by reindex where a busy key shares a key-range part (written before cuts), answering the same", async () => {
		// The busiest key a wallet_transfers key filter records with its rows: at parts of that many
		// rows, a key of more than half of them should have had a part of its own.
		const before = await loadManifest(root, CHAIN.id, CHAIN.number);
		const { key, rows, path } = await busiestKey(before);
		const answered = await answers([key]);
		process.env.CHAINLAKE_PART_ROWS = String(rows);
		try {
			const entry = indexFiles(root, before, "wallet_transfers").find((f) => f.path === path);
			expect(entry?.cuts ?? []).not.toContain(key);
			expect(await sharesBusyPart("wallet_transfers", path, entry?.cuts)).toBe(true);
			await reindexChain(root, CHAIN);
			const after = await loadManifest(root, CHAIN.id, CHAIN.number);
			// The file holding the key rewritten under a new name, the key between its own cuts.
			const now = indexFiles(root, after, "wallet_transfers").filter((f) => f.cuts?.includes(key));
			expect(now.length).toBeGreaterThan(0);
			for (const f of now) {
				expect(f.path).not.toBe(path);
				expect(f.cuts).toContain(`${key}0`);
				const own = partPaths(f.path, f.parts)[partOf(key, f)] as string;
				expect((await select(`SELECT DISTINCT address FROM read_parquet(${q(own)})`)).map((r) => r.address)).toEqual([
					key,
				]);
			}
			expect(await answers([key])).toBe(answered);
			await expectCleanAndDone(after.generation);
		} finally {
			delete process.env.CHAINLAKE_PART_ROWS;
		}
	}, 180_000);

	it("are rewritten by reindex where a busy key's own part holds more than a part's rows (written before slices), answering the same", async () => {
		// The busiest key again, now with its own part (the test before): at parts of a third of its
		// rows, its part should be cut by block into slices (key-parts.ts sliceCut).
		const before = await loadManifest(root, CHAIN.id, CHAIN.number);
		const { key, rows, path } = await busiestKey(before);
		const entry = indexFiles(root, before, "wallet_transfers").find((f) => f.path === path);
		expect(entry?.cuts).toContain(key);
		expect(entry?.cuts?.some((c) => c.startsWith(`${key}#`))).toBe(false);
		const answered = await answers([key]);
		process.env.CHAINLAKE_PART_ROWS = String(Math.floor(rows / 3));
		try {
			expect(await sharesBusyPart("wallet_transfers", path, entry?.cuts)).toBe(true);
			await reindexChain(root, CHAIN);
			const after = await loadManifest(root, CHAIN.id, CHAIN.number);
			expect(after.version).toBe(3);
			const now = indexFiles(root, after, "wallet_transfers").filter((f) => f.cuts?.includes(key));
			expect(now.length).toBeGreaterThan(0);
			for (const f of now) {
				const slices = partsIn(key, f);
				expect(slices.length).toBeGreaterThanOrEqual(3);
				let n = 0;
				for (const i of slices) {
					const part = partPaths(f.path, f.parts)[i] as string;
					const held = await select(`SELECT address, count(*)::INTEGER AS n FROM read_parquet(${q(part)}) GROUP BY 1`);
					expect(held.map((r) => r.address)).toEqual([key]);
					n += Number(held[0]?.n);
				}
				expect(n).toBe(rows);
			}
			expect(await answers([key])).toBe(answered);
			await expectCleanAndDone(after.generation);
		} finally {
			delete process.env.CHAINLAKE_PART_ROWS;
		}
	}, 180_000);

	it("are rewritten by reindex where lookup record files have larger groups than this version's (written before 256 rows a group)", async () => {
		// As the previous version wrote them: each transaction record part rewritten by the same
		// small-groups writer in groups of 512 rows, same rows, same order, same name.
		const before = await loadManifest(root, CHAIN.id, CHAIN.number);
		const old = indexFiles(root, before, "transaction_records");
		const parts = old.flatMap((f) => partPaths(f.path, f.parts));
		const conn = await db.connect();
		try {
			for (const part of parts)
				await writeSmallGroups(conn, `SELECT * FROM read_parquet(${q(part)}) ORDER BY hash`, part, 512);
		} finally {
			conn.closeSync();
		}
		// The fixture is only a fixture if some group is past today's size, and isCoarse says so.
		const groups = await Promise.all(parts.map(largestGroup));
		expect(Math.max(...groups)).toBeGreaterThan(INDEXES.transaction_records.rowGroupSize);
		// (Each file's first part stands for it: one write made its parts.)
		const coarse = old.filter((f) => (groups[parts.indexOf(f.path)] ?? 0) > INDEXES.transaction_records.rowGroupSize);
		expect(coarse.length).toBeGreaterThan(0);
		const writer = await createParquetWriter();
		try {
			for (const f of old) expect(await isCoarse(writer, "transaction_records", f.path)).toBe(coarse.includes(f));
		} finally {
			writer.close();
		}
		const hashes = (
			await select(`SELECT hash FROM read_parquet([${parts.map(q).join(", ")}]) ORDER BY hash(hash) LIMIT 40`)
		).map((r) => String(r.hash));
		const lookups = async () => {
			const store = await createStore(root);
			try {
				const out = [];
				for (const h of hashes) out.push(await findTransactionWithLogs(store.snapshot(CHAIN.id), h));
				return JSON.stringify(out, (_, v) => (typeof v === "bigint" ? v.toString() : v));
			} finally {
				store.close();
			}
		};
		const answered = await lookups();
		// Parts of 64 rows, so the regrouped files split anew into key-range parts too.
		process.env.CHAINLAKE_PART_ROWS = "64";
		try {
			await reindexChain(root, CHAIN);
			const after = await loadManifest(root, CHAIN.id, CHAIN.number);
			const now = indexFiles(root, after, "transaction_records");
			expect(Math.max(...now.map((f) => f.parts))).toBeGreaterThan(1);
			for (const f of coarse) expect(now.map((n) => n.path)).not.toContain(f.path);
			for (const f of now) {
				for (const [i, part] of partPaths(f.path, f.parts).entries()) {
					expect(await largestGroup(part)).toBeLessThanOrEqual(INDEXES.transaction_records.rowGroupSize);
					for (const r of await select(`SELECT hash FROM read_parquet(${q(part)})`))
						expect(partOf(String(r.hash), f)).toBe(i);
				}
			}
			expect(await lookups()).toBe(answered);
			await expectCleanAndDone(after.generation);
		} finally {
			delete process.env.CHAINLAKE_PART_ROWS;
		}
	}, 180_000);
});
