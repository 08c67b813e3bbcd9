import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INDEXES, type IndexDef } from "../../src/store/format/indexes.js";
import {
	cutsFor,
	equalPartOf,
	hasSlices,
	isSlice,
	meetsPart,
	ownPartRows,
	type PartLayout,
	partBound,
	partBounds,
	partCondition,
	partNumberSql,
	partOf,
	partPath,
	partPaths,
	partsFor,
	partsIn,
	sliceCut,
	slicedKeys,
} from "../../src/store/format/key-parts.js";
import { partitionPath } from "../../src/store/format/layout.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { type RunEntry, runParts } from "../../src/store/format/records.js";
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
 * many parts, and every key with more than 4 rows in a file in a part of its own: cuts), and
 * every route that reads an index answers the same over both.
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
			"0x7fff0",
			...Array.from({ length: 200 }, (_, i) => `0x${((i * 2654435761) >>> 0).toString(16).padStart(8, "0")}`),
		];
		const busy = [`0x${"0".repeat(40)}`, "0x4000", "0x7fff0", "0xc0", "native", ...keys.slice(12, 40)];
		const layouts: PartLayout[] = [
			1,
			2,
			8,
			64,
			4096,
			{ parts: 1 + cutsFor(busy, 1).length, cuts: cutsFor(busy, 1) },
			{ parts: 8 + cutsFor(busy, 8).length, cuts: cutsFor(busy, 8) },
			{ parts: 4096 + cutsFor(busy, 4096).length, cuts: cutsFor(busy, 4096) },
		];
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		try {
			for (const layout of layouts) {
				const bounds = partBounds(layout);
				const parts = bounds.length + 1;
				for (let i = 1; i < bounds.length; i++) expect((bounds[i] as string) > (bounds[i - 1] as string)).toBe(true);
				if (typeof layout === "number") for (let i = 1; i < parts; i++) expect(bounds[i - 1]).toBe(partBound(i, parts));
				// The key's own part's condition holds, its neighbours' and the first and last part's do not
				// (the conditions are ranges between ascending bounds, so no other can hold).
				for (const k of keys) {
					const p = partOf(k, layout);
					const others = [...new Set([p - 1, p + 1, 0, parts - 1])].filter((i) => i >= 0 && i < parts && i !== p);
					const checks = [p, ...others].map((i) => `(${partCondition("k", i, layout)}) AS c${i}`);
					// The part number the writer stages a derived index's rows by (parquet-writer.ts) agrees.
					const number = typeof layout === "number" && parts > 1 ? `, ${partNumberSql("k", layout)} AS part` : "";
					const [row] = (
						await conn.runAndReadAll(`SELECT ${checks.join(", ")}${number} FROM (SELECT '${k}' AS k)`)
					).getRowObjectsJS();
					expect(row?.[`c${p}`], `${k} in part ${p} of ${parts}`).toBe(true);
					if (number) expect(Number(row?.part), `${k}'s part number of ${parts}`).toBe(p);
					// A part lies in one equal-width part (a writer reads its rows from that one's).
					const equal = typeof layout === "number" ? layout : layout.parts - (layout.cuts?.length ?? 0);
					expect(equalPartOf(p, layout), `${k}'s equal-width part`).toBe(partOf(k, equal));
					for (const i of others) expect(row?.[`c${i}`], `${k} not in part ${i} of ${parts}`).toBe(false);
				}
				// A NULL key (no index holds one) is part 0's, so no split drops a row.
				const [nulls] = (
					await conn.runAndReadAll(
						`SELECT (${partCondition("k", 0, layout)}) AS c0${typeof layout === "number" && parts > 1 ? `, ${partNumberSql("k", layout)} AS part` : ""} FROM (SELECT NULL::VARCHAR AS k)`,
					)
				).getRowObjectsJS();
				expect(nulls?.c0).toBe(true);
				if (typeof layout === "number" && parts > 1) expect(Number(nulls?.part)).toBe(0);
				// A busy key is alone in its part: the part holds no other of these keys.
				if (typeof layout !== "number")
					for (const b of busy) expect(keys.filter((k) => partOf(k, layout) === partOf(b, layout))).toEqual([b]);
			}
		} finally {
			conn.closeSync();
			db.closeSync();
		}
	});

	it("gives a busy key a part of its own, and a merge reads only the inputs whose keys meet a part", () => {
		expect(ownPartRows(2048)).toBe(2048 * 16);
		const a = `0x4${"a".repeat(39)}`;
		const b = `0x4${"b".repeat(39)}`;
		// Two busy keys among 4 equal parts: each between its own cuts; a cut on an equal bound is not doubled.
		const cuts = cutsFor([b, a, "0x4000"], 4);
		expect(cuts).toEqual(["0x40000", a, `${a}0`, b, `${b}0`]);
		const layout = { parts: 4 + cuts.length, cuts };
		expect(partBounds(layout)).toEqual(["0x4000", "0x40000", a, `${a}0`, b, `${b}0`, "0x8000", "0xc000"]);
		expect(partOf(a, layout)).toBe(3);
		expect(partOf(`0x4${"a".repeat(38)}9`, layout)).toBe(2);
		expect(partOf(`0x4${"a".repeat(38)}b`, layout)).toBe(4);
		expect(partOf(b, layout)).toBe(5);
		expect(partOf("0xffff", layout)).toBe(8);
		// An input holding keys [min, max] meets the parts whose ranges those overlap.
		const meets = (min: string, max: string) =>
			Array.from({ length: 9 }, (_, i) => i).filter((i) => meetsPart(min, max, i, layout));
		expect(meets(a, a)).toEqual([3]);
		expect(meets("0x0", "0x3fff")).toEqual([0]);
		expect(meets("0x3fff", b)).toEqual([0, 1, 2, 3, 4, 5]);
		// (As text "0x9" is above "0x8000".)
		expect(meets("0x9", "0xf")).toEqual([7, 8]);
		expect(meets("0x8000", "0x8000")).toEqual([7]);
		expect(meets(`${b}0`, "0x7")).toEqual([6]);
		expect(partPath("/x/i/a.parquet", 3)).toBe("/x/i/a.p3.parquet");
	});

	it("splits a busy key's own part by blocks into slices, which a window of blocks picks among", async () => {
		const a = `0x4${"a".repeat(39)}`;
		const b = `0x4${"b".repeat(39)}`;
		const cuts = cutsFor([a, b], 4, new Map([[a, [100, 250]]]));
		expect(cuts).toEqual([a, sliceCut(a, 100), sliceCut(a, 250), `${a}0`, b, `${b}0`]);
		expect(sliceCut(a, 100)).toBe(`${a}#000000000100`);
		const layout = { parts: 4 + cuts.length, cuts };
		// Bounds: 0x4000, a, a#100, a#250, a0, b, b0, 0x8000, 0xc000: a's slices are parts 2, 3 and 4.
		expect(partOf(a, layout)).toBe(2);
		expect(partsIn(a, layout)).toEqual([2, 3, 4]);
		expect(partsIn(a, layout, [0, 99])).toEqual([2]);
		expect(partsIn(a, layout, [100, 100])).toEqual([3]);
		expect(partsIn(a, layout, [99, 300])).toEqual([2, 3, 4]);
		expect(partsIn(a, layout, [250, 10_000])).toEqual([4]);
		expect(partsIn(b, layout, [0, 10])).toEqual([6]);
		expect(partsIn(`0x4${"a".repeat(38)}9`, layout, [0, 1000])).toEqual([1]);
		// An input holding a's rows meets all of its slices (and only them).
		expect(Array.from({ length: 10 }, (_, i) => i).filter((i) => meetsPart(a, a, i, layout))).toEqual([2, 3, 4]);
		// Only a's slices are slices (written with dictionaries): not the first part, nor b's own, nor the last.
		expect(Array.from({ length: 10 }, (_, i) => i).filter((i) => isSlice(i, layout))).toEqual([2, 3, 4]);
		expect([0, 1, 2, 3].filter((i) => isSlice(i, 4))).toEqual([]);
		expect(equalPartOf(3, layout)).toBe(1);
		// The writer's condition puts each (key, block) row in the part partsIn reads for that block.
		const rows = [
			[a, 0],
			[a, 99],
			[a, 100],
			[a, 249],
			[a, 250],
			[a, 9_999_999],
			[b, 5],
			[`0x4${"a".repeat(38)}9`, 500],
			[`0x4${"a".repeat(38)}b`, 500],
		] as const;
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		try {
			for (const [k, block] of rows) {
				const checks = Array.from({ length: 10 }, (_, i) => `(${partCondition("k", i, layout)}) AS c${i}`);
				const [row] = (
					await conn.runAndReadAll(`SELECT ${checks.join(", ")} FROM (SELECT '${k}' AS k, ${block} AS block_number)`)
				).getRowObjectsJS();
				const holding = Array.from({ length: 10 }, (_, i) => i).filter((i) => row?.[`c${i}`] === true);
				expect(holding, `${k} at block ${block}`).toEqual(partsIn(k, layout, [block, block]));
			}
		} finally {
			conn.closeSync();
			db.closeSync();
		}
	});

	it("writes index files and runs in parts, which verify finds whole", async () => {
		const m = await loadManifest(parted, CHAIN_ID, CHAIN);
		expect(m.runs?.some((r) => (r.parts ?? 1) > 1)).toBe(true);
		expect(m.chunks.some((c) => Object.values(c.parts ?? {}).some((n) => (n ?? 1) > 1))).toBe(true);
		expect([...listedPaths(parted, m)].some((p) => /\.p\d+\.parquet$/.test(p))).toBe(true);
		const usual = await loadManifest(whole, CHAIN_ID, CHAIN);
		expect(usual.runs?.length).toBeGreaterThan(0);
		expect(usual.runs?.every((r) => r.parts === undefined)).toBe(true);
		// Keys with more than 4 rows in a file (half of CHAINLAKE_PART_ROWS) have parts of their own,
		// and a busy key's part holds that key alone.
		const cut = m.runs?.find((r) => (r.cuts?.length ?? 0) > 0);
		expect(cut).toBeDefined();
		// Saved as version 3: busy keys' parts are sliced by block (more than CHAINLAKE_PART_ROWS rows),
		// and a chainlake reading only 1 or 2 refuses it rather than pick wrong parts; the folder
		// without cuts stays version 1.
		expect(m.version).toBe(3);
		expect(m.runs?.some((r) => hasSlices(r.cuts))).toBe(true);
		expect((await loadManifest(whole, CHAIN_ID, CHAIN)).version).toBe(1);
		const run = cut as RunEntry;
		const key = INDEXES[run.index].key;
		const path = partitionPath(parted, CHAIN_ID, run.index, run);
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		try {
			const busy = (run.cuts ?? []).filter((c) => (run.cuts ?? []).includes(`${c}0`));
			expect(busy.length).toBeGreaterThan(0);
			for (const b of busy) {
				const part = partPath(path, partOf(b, runParts(run)));
				const read = await conn.runAndReadAll(
					`SELECT DISTINCT "${key}" AS k, count(*) OVER () AS n FROM read_parquet('${part}')`,
				);
				expect(read.getRowObjectsJS().map((r) => r.k)).toEqual([b]);
			}
			// A sliced key's slices hold it alone, none empty, in block order, and all its rows between
			// them (the slices' sizes: busy-parts.test.ts).
			const sliced = (m.runs ?? []).filter((r) => (INDEXES[r.index] as IndexDef).slices && hasSlices(r.cuts));
			expect(sliced.length).toBeGreaterThan(0);
			for (const r of sliced) {
				const file = partitionPath(parted, CHAIN_ID, r.index, r);
				for (const k of slicedKeys(r.cuts ?? [])) {
					const slices = partsIn(k, runParts(r));
					expect(slices.length).toBeGreaterThan(1);
					let last = -1;
					let total = 0;
					for (const i of slices) {
						const [s] = (
							await conn.runAndReadAll(
								`SELECT count(*)::INTEGER AS n, count(DISTINCT address)::INTEGER AS keys, min(block_number)::INTEGER AS lo, max(block_number)::INTEGER AS hi FROM read_parquet('${partPath(file, i)}') WHERE address = '${k}'`,
							)
						).getRowObjectsJS();
						const whole = Number(
							(await conn.runAndReadAll(`SELECT count(*) FROM read_parquet('${partPath(file, i)}')`)).getRows()[0]?.[0],
						);
						expect(whole, `${r.index} ${k} slice ${i}: only its rows`).toBe(Number(s?.n));
						expect(Number(s?.n)).toBeGreaterThan(0);
						expect(Number(s?.lo)).toBeGreaterThan(last);
						last = Number(s?.hi);
						total += Number(s?.n);
					}
					const all = await conn.runAndReadAll(
						`SELECT count(*) FROM read_parquet([${partPaths(file, r.parts)
							.map((p) => `'${p}'`)
							.join(", ")}]) WHERE address = '${k}'`,
					);
					expect(total).toBe(Number(all.getRows()[0]?.[0]));
				}
			}
		} finally {
			conn.closeSync();
			db.closeSync();
		}
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
				// Short pages and block ranges: a busy wallet's windows, over its slices (sliceCut).
				`/${CHAIN_ID}/v1/address/${w}/transfers?asset_type=native,ft,nft&limit=3`,
				`/${CHAIN_ID}/v1/address/${w}/transfers?asset_type=native,ft,nft&limit=3&order=desc`,
				`/${CHAIN_ID}/v1/address/${w}/txs?limit=4&block_number_start=10&block_number_end=40`,
				`/${CHAIN_ID}/v1/address/${w}/txs?limit=2&order=desc&block_number_start=0&block_number_end=30`,
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
				`/${CHAIN_ID}/v1/contract/${t}/transfers?limit=3`,
				`/${CHAIN_ID}/v1/contract/${t}/transfers?limit=3&order=desc&block_number_start=5&block_number_end=latest`,
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
