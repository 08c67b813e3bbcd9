import { existsSync } from "node:fs";
import { copyFile, cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TransferRow } from "../../src/extract/rows.js";
import { DATASETS } from "../../src/extract/rows.js";
import { replaceChunks } from "../../src/store/chunks/chunk-store.js";
import { createParquetWriter } from "../../src/store/files/parquet-writer.js";
import { INDEXES, type IndexDef, indexesFor } from "../../src/store/format/indexes.js";
import { partitionPath } from "../../src/store/format/layout.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import type { Manifest } from "../../src/store/format/records.js";
import { removeUnlisted } from "../../src/store/retire/remove-unlisted.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { INDEX_SIDES, indexDiff } from "../helpers/index-rows.js";
import { erc20Transfer } from "../helpers/transfer-rows.js";

/**
 * Index files on a real backfill of the anvil workload (partitions of 8 blocks, so many chunks):
 * each chunk lists both indexes, and each index file holds exactly the rows computed here,
 * independently, from the chunk's dataset file (one per side, the other side only when it
 * differs), sorted by (address, id), in row groups of at most
 * INDEXES.wallet_transfers.rowGroupSize rows with min/max statistics on `address`.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
/** Every index of a chunk of all datasets: by address, by hash, and the balance deltas (derived
 * by the backfill's merges though the chain is too short for a chunk to settle). */
const BOTH = indexesFor(DATASETS).sort();

let anvil: AnvilInstance;
let work: WorkloadResult;
let root: string;
let dataDir: string;
let manifest: Manifest;
let db: DuckDBInstance;

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	work = await runWorkload({ rpcUrl: anvil.url });
	root = await mkdtemp(join(tmpdir(), "chainlake-indexes-"));
	dataDir = join(root, "data");
	await backfillInto(dataDir, anvil.url, CHAIN, { traces: "parity", partitionSize: 8 });
	manifest = await loadManifest(dataDir, CHAIN_ID, CHAIN);
	db = await DuckDBInstance.create(":memory:");
});

afterAll(async () => {
	db?.closeSync();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

const q = (s: string) => `'${s.replaceAll("'", "''")}'`;

async function rows(sql: string): Promise<Record<string, unknown>[]> {
	const conn = await db.connect();
	try {
		return (await conn.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
	} finally {
		conn.closeSync();
	}
}

const indexFile = (dir: string, index: string, c: Manifest["chunks"][number]) => partitionPath(dir, CHAIN_ID, index, c);

describe("index files of a backfilled chain", () => {
	it("are listed for every chunk, both of them, and exist", async () => {
		expect(manifest.chunks.length).toBeGreaterThanOrEqual(5);
		for (const c of manifest.chunks) {
			expect([...(c.indexes ?? [])].sort(), `${c.from}..${c.to}`).toEqual(BOTH);
			for (const i of BOTH) expect(existsSync(indexFile(dataDir, i, c)), `${i} ${c.from}`).toBe(true);
		}
		// Nothing else sits in the index folders: each file and its key filter (and the Delta log).
		for (const i of BOTH) {
			const names = manifest.chunks.map((c) => indexFile(dataDir, i, c).split("/").at(-1) as string);
			expect((await readdir(join(dataDir, CHAIN_ID, i))).filter((n) => n !== "_delta_log").sort()).toEqual(
				names.flatMap((n) => [n, `${n}.filter`]).sort(),
			);
		}
	});

	it.each(Object.entries(INDEX_SIDES))("%s holds exactly one row per side of each source row", async (index, sides) => {
		const source = sides[0];
		const columns = [
			...["address", "id", "block_number", "side"],
			...(source === "transfers" ? ["asset_type", "token_standard", "contract"] : []),
			"record",
		];
		let total = 0;
		for (const c of manifest.chunks) {
			const file = indexFile(dataDir, index, c);
			// The index's columns: address, the row's id and block, the address's side, filter columns, the record.
			const described = await rows(`DESCRIBE SELECT * FROM read_parquet(${q(file)})`);
			expect(described.map((d) => d.column_name)).toEqual(columns);
			// The expected rows, computed from the chunk's dataset file; in (address, id) order.
			const diff = await indexDiff(db, index as keyof typeof INDEX_SIDES, file, [
				partitionPath(dataDir, CHAIN_ID, source, c),
			]);
			expect(diff, `${index} ${c.from}..${c.to}`).toEqual({
				extra: 0,
				missing: 0,
				rows: diff.expected,
				expected: diff.rows,
				sorted: true,
			});
			total += diff.rows;
		}
		// Independently of the files: the workload's own record of what it did.
		const expectedTotal =
			source === "transfers"
				? work.expected.transfers.reduce((n, t) => n + 1 + (t.to !== t.from ? 1 : 0), 0)
				: work.txs.reduce((n, t) => n + 1 + (t.to !== null && t.to !== t.from ? 1 : 0), 0);
		expect(total).toBe(expectedTotal);
		expect(total).toBeGreaterThan(20);
	});

	it("has row groups of at most its row group size with min/max statistics on its key (address or hash)", async () => {
		for (const c of manifest.chunks) {
			for (const i of BOTH) {
				const { key, rowGroupSize } = INDEXES[i as keyof typeof INDEXES];
				const file = q(indexFile(dataDir, i, c));
				const groups = await rows(
					`SELECT row_group_id AS g, row_group_num_rows AS n, stats_min_value AS lo, stats_max_value AS hi
					 FROM parquet_metadata(${file}) WHERE path_in_schema = '${key}' ORDER BY g`,
				);
				const [actual] = await rows(
					`SELECT min(${key}) AS lo, max(${key}) AS hi, count(*)::INT AS n FROM read_parquet(${file})`,
				);
				expect(groups.reduce((n, g) => n + Number(g.n), 0)).toBe(actual?.n);
				for (const g of groups) expect(Number(g.n)).toBeLessThanOrEqual(rowGroupSize);
				if (actual?.n === 0) continue;
				if (!(INDEXES[i as keyof typeof INDEXES] as IndexDef).smallGroups) {
					expect(groups[0]?.lo, `${i} ${c.from}`).toBe(actual?.lo);
					expect(groups.at(-1)?.hi, `${i} ${c.from}`).toBe(actual?.hi);
					continue;
				}
				// Arrow's writer (small-groups.ts) cuts text statistics to 64 bytes: still bounds.
				const [lo, hi] = [String(groups[0]?.lo), String(groups.at(-1)?.hi)];
				expect(lo <= String(actual?.lo) && String(actual?.lo).startsWith(lo), `${i} ${c.from}`).toBe(true);
				expect(hi >= String(actual?.hi), `${i} ${c.from}`).toBe(true);
			}
		}
	});

	it("splits a large index into row groups of at most its rowGroupSize, each with its own address range", async () => {
		// The workload's files are small (one row group each): derive the index of a chunk of 40 000 transfers.
		const writer = await createParquetWriter();
		const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
		const transfers: TransferRow[] = Array.from({ length: 40_000 }, (_, i) =>
			erc20Transfer(i, 1000, {
				transactionHash: `0x${i.toString(16).padStart(64, "0")}`,
				origin: addr(i % 5000),
				contract: addr(7),
				sender: addr(i % 5000),
				recipient: i % 10 === 0 ? addr(i % 5000) : addr(5000 + (i % 3000)),
			}),
		);
		try {
			const src = join(root, "big", "transfers.parquet");
			const out = join(root, "big", "wallet_transfers.parquet");
			await writer.write("transfers", transfers, src, join(root, "big", "staging"));
			const { rows: n } = await writer.derive("wallet_transfers", () => src, out);
			expect(n).toBe(40_000 + 36_000); // self-transfers (every 10th) once
			const groups = await rows(
				`SELECT row_group_id AS g, row_group_num_rows AS n, stats_min_value AS lo, stats_max_value AS hi
				 FROM parquet_metadata(${q(out)}) WHERE path_in_schema = 'address' ORDER BY g`,
			);
			expect(groups.length).toBeGreaterThanOrEqual(Math.ceil(n / INDEXES.wallet_transfers.rowGroupSize));
			expect(groups.reduce((s, g) => s + Number(g.n), 0)).toBe(n);
			for (const [k, g] of groups.entries()) {
				expect(Number(g.n)).toBeLessThanOrEqual(INDEXES.wallet_transfers.rowGroupSize);
				expect(g.lo, `group ${k}`).toBeTruthy();
				expect(g.hi, `group ${k}`).toBeTruthy();
				expect(String(g.lo) <= String(g.hi)).toBe(true);
				// Sorted by address: each group's range starts at or after the previous one's end.
				if (k > 0) expect(String(g.lo) >= String(groups[k - 1]?.hi)).toBe(true);
			}
			// The statistics are the true bounds of each group's rows.
			const bounds = await rows(`SELECT min(address) AS lo, max(address) AS hi FROM read_parquet(${q(out)})`);
			expect([groups[0]?.lo, groups.at(-1)?.hi]).toEqual([bounds[0]?.lo, bounds[0]?.hi]);
		} finally {
			writer.close();
		}
	});
});

describe("index files and the chunk store", () => {
	it("removeUnlisted deletes unlisted index files and keeps the listed ones", async () => {
		const copy = join(root, "unlisted");
		await cp(dataDir, copy, { recursive: true });
		const m = await loadManifest(copy, CHAIN_ID, CHAIN);
		const first = m.chunks[0] as Manifest["chunks"][number];
		const dropped = m.chunks[2] as Manifest["chunks"][number];
		// A stray index file (as a crash between writing and listing leaves it), and a chunk whose
		// index files the manifest no longer lists.
		const stray = partitionPath(copy, CHAIN_ID, "wallet_transfers", {
			from: 9990,
			to: 9999,
			last_hash: "0xdeadbeef",
		});
		await copyFile(indexFile(copy, "wallet_transfers", first), stray);
		delete dropped.indexes;
		const removed = await removeUnlisted(copy, m);
		// The dropped chunk's index files were in the Delta logs: removed from them now, they stay
		// on disk for the retention (outside readers may be on them); their key filters, which no
		// log lists, go. The stray file was never listed anywhere: it goes.
		expect(removed.sort()).toEqual(
			[
				join("wallet_transfers", stray.split("/").at(-1) as string),
				...BOTH.map((i) => `${join(i, indexFile(copy, i, dropped).split("/").at(-1) as string)}.filter`),
			].sort(),
		);
		expect(existsSync(stray)).toBe(false);
		for (const c of m.chunks) {
			for (const i of BOTH) expect(existsSync(indexFile(copy, i, c)), `${i} ${c.from}`).toBe(true);
			for (const d of c.datasets) expect(existsSync(partitionPath(copy, CHAIN_ID, d, c)), `${d} ${c.from}`).toBe(true);
		}
		// Without the Delta export, nothing keeps them: they go at once.
		m.lake = { delta: false };
		const again = await removeUnlisted(copy, m);
		expect(again.sort()).toEqual(
			BOTH.map((i) => join(i, indexFile(copy, i, dropped).split("/").at(-1) as string)).sort(),
		);
		for (const i of BOTH) expect(existsSync(indexFile(copy, i, dropped))).toBe(false);
	});

	it("replaceChunks returns the removed chunks' index files with their dataset files", async () => {
		const copy = join(root, "replace");
		await cp(dataDir, copy, { recursive: true });
		const m = await loadManifest(copy, CHAIN_ID, CHAIN);
		const gone = [m.chunks[1], m.chunks[3]] as Manifest["chunks"];
		const kept = m.chunks.length - 2;
		const files = await replaceChunks(copy, m, gone, []);
		const expected = gone.flatMap((c) => [
			...c.datasets.map((d) => partitionPath(copy, CHAIN_ID, d, c)),
			...BOTH.flatMap((i) => [indexFile(copy, i, c), `${indexFile(copy, i, c)}.filter`]),
		]);
		expect([...files].sort()).toEqual(expected.sort());
		// The caller deletes them later: they are still there, and the saved manifest lists neither chunk.
		for (const f of files) expect(existsSync(f), f).toBe(true);
		const saved = await loadManifest(copy, CHAIN_ID, CHAIN);
		expect(saved.chunks).toHaveLength(kept);
		expect(saved.chunks.some((c) => gone.some((g) => g.from === c.from))).toBe(false);
	});
});
