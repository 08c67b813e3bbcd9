import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TransferRow } from "../../src/extract/rows.js";
import {
	createParquetWriter,
	type IndexWrite,
	indexRowsSql,
	type ParquetWriter,
} from "../../src/store/files/parquet-writer.js";
import { partOf, partPaths, partsIn, SLICE_ROW_GROUP_SIZE, sliceRows } from "../../src/store/format/key-parts.js";
import { checkManifestText } from "../../src/store/format/manifest-check.js";
import {
	type FilteredFile,
	filterPath,
	loadKeyFilter,
	writeKeyFilter,
	writeKeyFilters,
} from "../../src/store/indexes/key-filter.js";
import { erc20Transfer } from "../helpers/transfer-rows.js";

/**
 * A busy key's own key-range part (src/store/format/key-parts.ts): derive and merge, through the
 * real writer into real Parquet files, put every row of a key with more than half a part's rows
 * into a part holding that key alone (cut by block into slices of a part's rows when it has more
 * than a part's),
 * every other key into the equal-width part its range says, and lose or add no row. (The routes over such files: test/store/key-parts.test.ts.)
 * A small chunk's index written as one part at once is written again by the layout when it
 * holds more than a shared part may. A chunk's key filters written together (one statement for
 * their keys) are the filters written one file at a time.
 */
const PART_ROWS = 4096;
/** Addresses spread over the key space as real ones are (the equal-width parts split it by prefix). */
const addr = (n: number) => `0x${((n * 2654435761) >>> 0).toString(16).padStart(8, "0").repeat(5)}`;
// Among the quiet keys of the first equal-width parts: without a part of its own it would make
// its part several times the others.
const BUSY = `0x${"2a".repeat(20)}`;

/** A chunk's transfers: `busy` of them sent by BUSY, the rest among 4,000 quiet senders. */
function transfers(firstBlock: number, n: number, busy: number): TransferRow[] {
	return Array.from({ length: n }, (_, i) =>
		erc20Transfer(i, firstBlock, {
			transactionHash: `0x${(firstBlock * 1000 + i).toString(16).padStart(64, "0")}`,
			origin: addr(1),
			contract: addr(7),
			sender: i < busy ? BUSY : addr(1 + (i % 4000)),
			recipient: addr(100_000 + firstBlock * 100 + i),
		}),
	);
}

let root: string;
let writer: ParquetWriter;
let db: DuckDBInstance;
const rows = async (sql: string) => (await (await db.connect()).runAndReadAll(sql)).getRowObjectsJS();
const list = (files: string[]) => `[${files.map((f) => `'${f}'`).join(", ")}]`;

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), "chainlake-busy-parts-"));
	writer = await createParquetWriter();
	db = await DuckDBInstance.create(":memory:");
	process.env.CHAINLAKE_PART_ROWS = String(PART_ROWS);
});

afterAll(async () => {
	delete process.env.CHAINLAKE_PART_ROWS;
	writer?.close();
	db?.closeSync();
	if (root) await rm(root, { recursive: true, force: true });
});

/**
 * Checks `written` at `path`: BUSY alone in its own part, cut by block (when it has more than a
 * part's rows) into slices of at most a slice's rows and a block's (its rows come 100 a block), in
 * row groups of SLICE_ROW_GROUP_SIZE; every other key in the part partOf names.
 */
async function checkParts(path: string, written: IndexWrite, busyRows: number) {
	const slices = written.cuts.filter((c) => c.startsWith(`${BUSY}#`));
	expect(written.cuts).toEqual([BUSY, ...slices, `${BUSY}0`]);
	const files = partPaths(path, written.parts);
	const own = partsIn(BUSY, written);
	const sliceSize = sliceRows(SLICE_ROW_GROUP_SIZE);
	expect(sliceSize).toBe(PART_ROWS);
	const sliced = busyRows > PART_ROWS;
	expect(own.length).toBe(sliced ? Math.ceil(busyRows / sliceSize) : 1);
	expect(own[0]).toBe(partOf(BUSY, written));
	let n = 0;
	let last = -1;
	for (const i of own) {
		const busy = await rows(`SELECT DISTINCT address FROM read_parquet('${files[i]}')`);
		expect(busy.map((r) => r.address)).toEqual([BUSY]);
		const [slice] = await rows(
			`SELECT count(*) AS n, min(block_number) AS lo, max(block_number) AS hi FROM read_parquet('${files[i]}')`,
		);
		// A slice in small row groups (the small-groups writer): a page decodes little of it.
		const [groups] = await rows(
			`SELECT max(row_group_num_rows) AS most, count(DISTINCT row_group_id) AS n FROM parquet_metadata('${files[i]}')`,
		);
		if (sliced) {
			expect(Number(slice?.n)).toBeLessThanOrEqual(sliceSize + 100);
			expect(Number(groups?.most)).toBeLessThanOrEqual(SLICE_ROW_GROUP_SIZE);
			expect(Number(groups?.n)).toBe(Math.ceil(Number(slice?.n) / SLICE_ROW_GROUP_SIZE));
		} else expect(Number(groups?.most)).toBe(512);
		expect(Number(slice?.lo)).toBeGreaterThan(last);
		// The window of the slice's blocks picks it alone.
		expect(partsIn(BUSY, written, [Number(slice?.lo), Number(slice?.hi)])).toEqual([i]);
		last = Number(slice?.hi);
		n += Number(slice?.n);
	}
	expect(n).toBe(busyRows);
	for (const [i, f] of files.entries()) {
		if (own.includes(i)) continue;
		const keys = await rows(`SELECT DISTINCT address FROM read_parquet('${f}')`);
		for (const k of keys) expect(partOf(String(k.address), written), `${k.address} in part ${i}`).toBe(i);
	}
	// The quiet parts are the equal-width ones, each within a part's rows (the busy key's would be 3x).
	const sizes = await rows(
		`SELECT filename AS f, count(*) AS n FROM read_parquet(${list(files)}, filename = true) GROUP BY 1`,
	);
	for (const s of sizes) if (!own.some((i) => files[i] === s.f)) expect(Number(s.n)).toBeLessThanOrEqual(PART_ROWS);
}

describe("a busy key's own part", () => {
	it("is written by a chunk's derive and kept by a merge of two chunks, every row once", async () => {
		const a = join(root, "a", "transfers.parquet");
		const b = join(root, "b", "transfers.parquet");
		await writer.write("transfers", transfers(1000, 16_000, 6_000), a, join(root, "staging"));
		await writer.write("transfers", transfers(2000, 12_000, 3_000), b, join(root, "staging"));
		const da = join(root, "a", "wallet_transfers.parquet");
		const db_ = join(root, "b", "wallet_transfers.parquet");
		const wa = await writer.derive("wallet_transfers", () => a, da);
		const wb = await writer.derive("wallet_transfers", () => b, db_);
		// Each transfer once for its sender and once for its recipient (never the same here).
		expect([wa.rows, wb.rows]).toEqual([32_000, 24_000]);
		await checkParts(da, wa, 6_000);
		await checkParts(db_, wb, 3_000);

		const inputs = [...partPaths(da, wa.parts), ...partPaths(db_, wb.parts)];
		const run = join(root, "run", "wallet_transfers.parquet");
		const wr = await writer.mergeIndex("wallet_transfers", inputs, run);
		expect(wr.rows).toBe(56_000);
		await checkParts(run, wr, 9_000);
		// The run holds exactly its inputs' rows, in key order within each part.
		const ours = partPaths(run, wr.parts);
		const diff = await rows(
			`SELECT (SELECT count(*) FROM (SELECT * FROM read_parquet(${list(ours)}) EXCEPT ALL SELECT * FROM read_parquet(${list(inputs)}))) AS extra,
			        (SELECT count(*) FROM (SELECT * FROM read_parquet(${list(inputs)}) EXCEPT ALL SELECT * FROM read_parquet(${list(ours)}))) AS lost`,
		);
		expect(diff.map((d) => [Number(d.extra), Number(d.lost)])).toEqual([[0, 0]]);
	});

	it("is not made for a key at or under half a part's rows", async () => {
		const c = join(root, "c", "transfers.parquet");
		await writer.write("transfers", transfers(3000, 16_000, 2_048), c, join(root, "staging"));
		const written = await writer.derive("wallet_transfers", () => c, join(root, "c", "wallet_transfers.parquet"));
		expect(written.cuts).toEqual([]);
		expect(written.parts).toBe(8);
	});
});

describe("a small chunk's index", () => {
	/** An ERC-1155 batch of `n` token ids from one sender to one recipient: 2n holdings' deltas from one transfer. */
	const batch = (n: number): TransferRow => ({
		...erc20Transfer(0, 5000, {
			transactionHash: `0x${"5e".repeat(32)}`,
			origin: addr(1),
			contract: addr(7),
			sender: addr(2),
			recipient: addr(3),
		}),
		asset_type: "nft",
		token_standard: "erc1155",
		value: null,
		batch_token_ids: Array.from({ length: n }, (_, i) => String(i + 1)),
		batch_values: Array.from({ length: n }, () => "1"),
	});

	it("is written as one part at once, and again by the layout when it holds more than a shared part may", async () => {
		// Parts of 8 rows: a key may hold 4 in a shared part. One transfer is small enough for the
		// one-part try (parquet-writer.ts derive: 1 row x 4 <= 4), but the batch's holdings are 20.
		process.env.CHAINLAKE_PART_ROWS = "8";
		try {
			const source = join(root, "e", "transfers.parquet");
			await writer.write("transfers", [batch(10)], source, join(root, "staging"));
			const path = join(root, "e", "nft_balances.parquet");
			const written = await writer.derive("nft_balances", () => source, path);
			expect(written.rows).toBe(20);
			expect(written.parts).toBeGreaterThan(1);
			// Every holding once, in the layout's parts (the try's one part is overwritten, not left beside them).
			const ours = partPaths(path, written.parts);
			const want = indexRowsSql("nft_balances", () => source);
			const diff = await rows(
				`SELECT (SELECT count(*) FROM (SELECT * FROM read_parquet(${list(ours)}) EXCEPT ALL ${want})) AS extra,
				        (SELECT count(*) FROM (${want} EXCEPT ALL SELECT * FROM read_parquet(${list(ours)}))) AS lost`,
			);
			expect(diff.map((d) => [Number(d.extra), Number(d.lost)])).toEqual([[0, 0]]);
			for (const [i, f] of ours.entries()) {
				const keys = await rows(`SELECT DISTINCT address FROM read_parquet('${f}')`);
				for (const k of keys) expect(partOf(String(k.address), written), `${k.address} in part ${i}`).toBe(i);
			}

			// One holding's batch (2 deltas) stays the one part the try wrote.
			const one = join(root, "e", "erc1155_one.parquet");
			await writer.write("transfers", [batch(1)], join(root, "f", "transfers.parquet"), join(root, "staging"));
			const small = await writer.derive("nft_balances", () => join(root, "f", "transfers.parquet"), one);
			expect([small.rows, small.parts, small.cuts]).toEqual([2, 1, []]);
		} finally {
			process.env.CHAINLAKE_PART_ROWS = String(PART_ROWS);
		}
	});
});

describe("a manifest's cuts", () => {
	const chunk = {
		from: 0,
		to: 9,
		traces: "none",
		datasets: ["blocks"],
		rows: { blocks: 10 },
		indexes: ["wallet_transfers"],
		first_parent_hash: `0x${"0".repeat(64)}`,
		last_hash: `0x${"1".repeat(64)}`,
	};
	const text = (c: object) =>
		JSON.stringify({ version: 1, chain: "eip155-1", chain_number: 1, chunks: [{ ...chunk, ...c }] });
	it("are read when in order and fewer than the file's parts, refused otherwise", () => {
		const good = { parts: { wallet_transfers: 6 }, cuts: { wallet_transfers: [BUSY, `${BUSY}0`] } };
		expect(checkManifestText(text(good), "eip155-1").problem).toBeNull();
		const unsorted = { ...good, cuts: { wallet_transfers: [`${BUSY}0`, BUSY] } };
		expect(checkManifestText(text(unsorted), "eip155-1").problem).toMatch(/cuts must be distinct and in order/);
		const many = { parts: { wallet_transfers: 2 }, cuts: good.cuts };
		expect(checkManifestText(text(many), "eip155-1").problem).toMatch(/as many cuts as parts or more/);
		expect(checkManifestText(text({ cuts: { wallet_transfers: [1] } }), "eip155-1").problem).toMatch(
			/not a chainlake manifest/,
		);
		// A run's, the same.
		const run = { index: "wallet_transfers", from: 0, to: 9, gen: 1, chunks: 1, rows: 10, keys: 1, last_hash: "0x" };
		const withRun = (r: object) => JSON.stringify({ ...JSON.parse(text({})), runs: [{ ...run, ...r }] });
		expect(checkManifestText(withRun({ parts: 3, cuts: [BUSY, `${BUSY}0`] }), "eip155-1").problem).toBeNull();
		expect(checkManifestText(withRun({ parts: 2, cuts: [BUSY, `${BUSY}0`] }), "eip155-1").problem).toMatch(
			/runs\.0: an index file has as many cuts as parts or more/,
		);
		expect(checkManifestText(withRun({ parts: 3, cuts: "0x" }), "eip155-1").problem).toMatch(
			/runs\.0: a file's cuts must be distinct and in order/,
		);
	});
});

describe("a chunk's key filters written together", () => {
	it("are each file's filter as written alone, byte for byte: every part's keys, and the busy keys with their rows", async () => {
		const source = join(root, "g", "transfers.parquet");
		await writer.write("transfers", transfers(5000, 6_000, 3_000), source, join(root, "staging"));
		// A file of several key-range parts with a busy key (wallet_transfers), one whose only key
		// is busy (token_transfers: one contract), two with no busy list (keyed by holder, by token),
		// and an empty one (no NFT moved).
		const files: FilteredFile[] = [];
		for (const index of [
			"wallet_transfers",
			"token_transfers",
			"erc20_balances",
			"erc20_holders",
			"nft_holders",
		] as const) {
			const path = join(root, "g", `${index}.parquet`);
			const written = await writer.derive(index, () => source, path);
			files.push({ path, index, parts: written.parts, rows: written.rows });
		}
		expect(files[0]?.parts).toBeGreaterThan(2);
		// Few enough rows for one statement over them all (not a file at a time), one file of none.
		expect(files.reduce((n, f) => n + f.rows, 0)).toBeLessThanOrEqual(2 ** 18);
		expect(files[4]?.rows).toBe(0);
		await writeKeyFilters(writer, files);
		const together = await Promise.all(files.map((f) => readFile(filterPath(f.path))));
		for (const f of files) await writeKeyFilter(writer, f.path, f.index, f.parts);
		for (const [i, f] of files.entries())
			expect(Buffer.compare(together[i] as Buffer, await readFile(filterPath(f.path))), f.index).toBe(0);
		// And what they say: every wallet of the file is in it, the busy one listed with its rows.
		const wallets = await loadKeyFilter(filterPath(files[0]?.path as string));
		const keys = await rows(
			`SELECT DISTINCT address FROM read_parquet(${list(partPaths(files[0]?.path as string, files[0]?.parts))})`,
		);
		expect(keys.length).toBeGreaterThan(4000);
		expect(keys.filter((k) => !wallets.has(String(k.address)))).toEqual([]);
		expect([...(wallets.busy ?? [])]).toEqual([BUSY]);
		expect(wallets.busyRows?.get(BUSY)?.rows).toBe(3_000);
		const token = await loadKeyFilter(filterPath(files[1]?.path as string));
		expect([...(token.busy ?? [])]).toEqual([addr(7)]);
	});
});
