import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
	keyRangeFiles,
	partBound,
	partCondition,
	partNumberSql,
	partOf,
	partPaths,
	partsFor,
} from "../../src/store/format/key-parts.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { listedPaths } from "../../src/store/indexes/listing.js";
import { verifyChain } from "../../src/store/repair/verify.js";
import { checkRuns } from "../../src/store/repair/verify-runs.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { backfillInto, openViews } from "../helpers/anvil-chain.js";
import { serveFolder } from "../helpers/api.js";
import { nodeCall } from "../helpers/node-rpc.js";

/**
 * Key-range parts (src/store/format/key-parts.ts): an index file written as several files split
 * by key answers exactly as one file does. The same chain is backfilled twice, once as usual (a
 * part per file at this size) and once with CHAINLAKE_PART_ROWS=8 (every index file and run in
 * many parts), and every route that reads an index answers the same over both.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const KEY = "parts-key";
let anvil: AnvilInstance;
let work: WorkloadResult;
let root: string;
let whole: string;
let parted: string;

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	work = await runWorkload({ rpcUrl: anvil.url });
	// Blocks enough for chunks to settle (64 below the tip): merged runs and the balance indexes.
	await nodeCall(anvil.url, "anvil_mine", ["0x46"]);
	root = await mkdtemp(join(tmpdir(), "chainlake-parts-"));
	whole = join(root, "whole");
	parted = join(root, "parted");
	// No Delta Lake logs: nothing here reads them, and they are a good part of each chunk's save.
	await backfillInto(whole, anvil.url, CHAIN, { traces: "parity", partitionSize: 4, lake: { delta: false } });
	process.env.CHAINLAKE_PART_ROWS = "8";
	try {
		await backfillInto(parted, anvil.url, CHAIN, { traces: "parity", partitionSize: 4, lake: { delta: false } });
	} finally {
		delete process.env.CHAINLAKE_PART_ROWS;
	}
}, 300_000);

afterAll(async () => {
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("key-range parts", () => {
	it("put every key in exactly one part, as the SQL condition the writer splits by does", async () => {
		expect(partsFor(0, 2048)).toBe(1);
		expect(partsFor(2048 * 32, 2048)).toBe(1);
		expect(partsFor(2048 * 32 + 1, 2048)).toBe(2);
		expect(partsFor(2048 * 32 * 100, 2048)).toBe(128);
		expect(partsFor(1e12, 2048)).toBe(4096);
		const keys = [
			`0x${"0".repeat(40)}`,
			`0x${"f".repeat(64)}`,
			"0x8000",
			"0x7fff",
			"native",
			"",
			"0X12",
			"0xABCDEF",
			"0xc0",
			"0x4000",
			"0x3fffzz",
			...Array.from({ length: 200 }, (_, i) => `0x${((i * 2654435761) >>> 0).toString(16).padStart(8, "0")}`),
		];
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		try {
			for (const parts of [1, 2, 8, 64, 4096]) {
				for (let i = 1; i < parts; i++) expect(partBound(i, parts) > partBound(i - 1, parts) || i === 1).toBe(true);
				// The key's own part's condition holds, its neighbours' and the first and last part's do not
				// (the conditions are ranges between ascending bounds, so no other can hold).
				for (const k of keys) {
					const p = partOf(k, parts);
					const others = [...new Set([p - 1, p + 1, 0, parts - 1])].filter((i) => i >= 0 && i < parts && i !== p);
					const checks = [p, ...others].map((i) => `(${partCondition("k", i, parts)}) AS c${i}`);
					// The part number the writer stages a derived index's rows by (parquet-writer.ts) agrees.
					const number = parts > 1 ? `, ${partNumberSql("k", parts)} AS part` : "";
					const [row] = (
						await conn.runAndReadAll(`SELECT ${checks.join(", ")}${number} FROM (SELECT '${k}' AS k)`)
					).getRowObjectsJS();
					expect(row?.[`c${p}`], `${k} in part ${p} of ${parts}`).toBe(true);
					if (parts > 1) expect(Number(row?.part), `${k}'s part number of ${parts}`).toBe(p);
					for (const i of others) expect(row?.[`c${i}`], `${k} not in part ${i} of ${parts}`).toBe(false);
				}
			}
		} finally {
			conn.closeSync();
			db.closeSync();
		}
	});

	it("names the files of a merge's inputs whose key range meets a part (the others are not read)", () => {
		const a = partPaths("/x/i/a.parquet", 4);
		const b = partPaths("/x/i/b.parquet", 1);
		const c = partPaths("/x/i/c.parquet", 16);
		const files = [...a, ...b, ...c];
		// Part 1 of 2 is the upper half of the key space: a's parts 2 and 3, all of b, c's 8..15.
		expect(keyRangeFiles(files, 1, 2)).toEqual([a[2], a[3], ...b, ...c.slice(8)]);
		// Part 5 of 8: a's part 2, b, c's 10 and 11.
		expect(keyRangeFiles(files, 5, 8)).toEqual([a[2], ...b, c[10], c[11]]);
		// Each file meets at least one part, and the parts of each file that meet part i are its key range's.
		for (const parts of [1, 2, 4, 32])
			expect(new Set(Array.from({ length: parts }, (_, i) => keyRangeFiles(files, i, parts)).flat())).toEqual(
				new Set(files),
			);
		// An incomplete set of parts is kept whole (its row groups' statistics still prune).
		expect(keyRangeFiles([a[0] as string, a[3] as string], 0, 2)).toEqual([a[0], a[3]]);
	});

	it("writes index files and runs in parts, which verify finds whole", async () => {
		const m = await loadManifest(parted, CHAIN_ID, CHAIN);
		expect(m.runs?.some((r) => (r.parts ?? 1) > 1)).toBe(true);
		expect(m.chunks.some((c) => Object.values(c.parts ?? {}).some((n) => (n ?? 1) > 1))).toBe(true);
		expect([...listedPaths(parted, m)].some((p) => /\.p\d+\.parquet$/.test(p))).toBe(true);
		const usual = await loadManifest(whole, CHAIN_ID, CHAIN);
		expect(usual.runs?.length).toBeGreaterThan(0);
		expect(usual.runs?.every((r) => r.parts === undefined)).toBe(true);
		const report = await verifyChain(parted, CHAIN_ID);
		expect(report.manifestError).toBeNull();
		expect(report.files).toBeGreaterThan((await verifyChain(whole, CHAIN_ID)).files);
		expect(report.problems).toEqual([]);
		expect(await checkRuns(parted, m)).toEqual([]);
	});

	it("answers every index-reading route the same as one file per index", async () => {
		const views = await openViews(whole, CHAIN);
		let txs: string[];
		let blocks: string[];
		try {
			txs = (await views.rows("SELECT transaction_hash AS h FROM transactions ORDER BY id")).map((r) => String(r.h));
			blocks = (await views.rows("SELECT hash AS h FROM blocks ORDER BY number")).map((r) => String(r.h));
		} finally {
			views.close();
		}
		const wallets = [...Object.values(work.accounts), ...Object.values(work.contracts), `0x${"0".repeat(40)}`];
		const tokens = [work.contracts.token20, work.contracts.token721, work.contracts.token1155];
		const urls = [
			...txs.map((h) => `/${CHAIN_ID}/v1/txs/${h}`),
			...blocks.map((h) => `/${CHAIN_ID}/v1/blocks/${h}`),
			`/${CHAIN_ID}/v1/txs/0x${"ab".repeat(32)}`,
			...wallets.flatMap((w) => [
				`/${CHAIN_ID}/v1/address/${w}/transfers?asset_type=native,ft,nft&limit=1000`,
				`/${CHAIN_ID}/v1/address/${w}/transfers?asset_type=ft&order=desc&limit=2`,
				`/${CHAIN_ID}/v1/address/${w}/txs?limit=1000&include_logs=true`,
				`/balances/${CHAIN_ID}/v1/addresses/${w}/tokens`,
				`/balances/${CHAIN_ID}/v1/addresses/${w}/tokens?block_number=20`,
				`/balances/${CHAIN_ID}/v1/addresses/${w}/native`,
				`/nft/${CHAIN_ID}/v1/${w}/inventory`,
			]),
			...tokens.flatMap((t) => [
				`/balances/${CHAIN_ID}/v1/tokens/${t}/holders`,
				`/balances/${CHAIN_ID}/v1/tokens/${t}/holders?block_number=20`,
				`/nft/${CHAIN_ID}/v1/${t}/owner`,
			]),
		];
		const answers = async (dir: string) => {
			const api = await serveFolder(dir, join(root, "keys.json"), KEY);
			try {
				const out: Record<string, { status: number; body: unknown }> = {};
				for (const url of urls) {
					const res = await api.app.inject({ url, headers: { authorization: `Bearer ${KEY}` } });
					out[url] = { status: res.statusCode, body: res.json() };
				}
				return out;
			} finally {
				await api.close();
			}
		};
		const expected = await answers(whole);
		const ok = Object.values(expected).filter((a) => a.status === 200).length;
		expect(ok).toBeGreaterThan(urls.length - 5);
		expect(await answers(parted)).toEqual(expected);
	});
});
