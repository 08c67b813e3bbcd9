import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tokenBalances } from "../../src/query/balances.js";
import { findCreations } from "../../src/query/contracts.js";
import { createStore } from "../../src/query/store/create-store.js";
import { isQuiet } from "../../src/query/store/key-filters.js";
import { findWalletTransactions } from "../../src/query/transactions.js";
import { type AssetFilter, findTransfers, type TransferFilter } from "../../src/query/transfers.js";
import { saveManifest } from "../../src/store/delta/save-manifest.js";
import { createParquetWriter } from "../../src/store/files/parquet-writer.js";
import { INDEXES, type IndexName } from "../../src/store/format/indexes.js";
import { partPaths } from "../../src/store/format/key-parts.js";
import { listedFiles, loadManifest } from "../../src/store/format/manifest.js";
import type { Manifest } from "../../src/store/format/records.js";
import { ranksStep } from "../../src/store/holdings/holder-ranks.js";
import { loadKeyFilter, withBusyKeys } from "../../src/store/indexes/key-filter.js";
import { indexFiles, listedPaths } from "../../src/store/indexes/listing.js";
import { reindexChain } from "../../src/store/repair/reindex.js";
import { verifyChain } from "../../src/store/repair/verify.js";
import type { Scale } from "../../src/synth/scales.js";
import { writeSynthChain } from "../../src/synth/synth.js";
import { parseChainId } from "../../src/util/chain.js";
import { sqlString } from "../../src/util/sql-string.js";
import { rowsOf } from "../helpers/duck-rows.js";
import { olderCopy } from "../helpers/older-folder.js";

/**
 * By-address records (src/store/format/address-records.ts): a new folder's wallet pages come from
 * `wallet_transfers` and `wallet_transactions`, a caller's creations from `wallet_creations` (address, id, block number, filter columns and the
 * row's other fields as one JSON array; the block's hash and timestamp put back from the blocks
 * files), and answer exactly as folders written before them (the records holding every field,
 * `transfer_records_by_address` and `transaction_records_by_address`, and before those the whole
 * rows, `transfers_by_address` and `transactions_by_address`) and as the datasets alone, for
 * every filter a wallet page takes, and the balances summed from a wallet's transfers where a
 * chunk lacks its balance deltas; the block stamps equal the blocks' with room for a few of them
 * only (slices dropped and read again); `npm run reindex` turns an older folder into a new one.
 */
const SCALE: Scale = { blocks: 600, accounts: 400, contracts: 12, factories: 5, partitionSize: 100 };
const CHAIN = parseChainId("eip155-1");
const PAIRS = [
	["transfer_records_by_address", "wallet_transfers"],
	["transaction_records_by_address", "wallet_transactions"],
] as const;
const WHOLE_ROWS = [
	["transfers_by_address", "wallet_transfers"],
	["transactions_by_address", "wallet_transactions"],
] as const;
const RECORDS = [...PAIRS.map(([, now]) => now), "wallet_creations"] as const;
let root: string;
let fresh: string;
let db: DuckDBInstance;

const q = sqlString;
const select = (sql: string) => rowsOf(db, sql);
const json = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x));

/** Wallets to ask about: the busiest and a few quiet ones, with a counterparty and a token each. */
const BUSIEST = 2;
const QUIET = 2;
let wallets: { address: string; counterparty: string; contract: string | null; origin: string }[];
/** Callers of contract creations (factories and deployers), each with an origin of one of its creations. */
let callers: { caller: string; origin: string }[];

/** Every wallet page and balance asked of folder `dir` (bigints as text; a row's keys in any order). */
async function answers(dir: string): Promise<unknown> {
	const store = await createStore(dir);
	try {
		// (A snapshot a question: each has one request's time budget.)
		const db = () => store.snapshot(CHAIN.id);
		const out: unknown[] = [];
		for (const w of wallets) {
			const filters: Omit<TransferFilter, "address">[] = [
				{},
				{ direction: "outgoing" },
				{ direction: "incoming" },
				{ counterparty: w.counterparty },
				{ direction: "outgoing", counterparty: w.counterparty },
				{ origin: w.origin },
				...(["native", "ft", "nft", "multi"] as AssetFilter[]).map((a) => ({ assets: [a] })),
				...(w.contract ? [{ contracts: [w.contract] }, { token: w.contract }] : []),
			];
			for (const order of ["asc", "desc"] as const) {
				for (const f of filters) {
					// Unfiltered, two pages: the second resumes after the first's last id.
					const page = { start: 0, end: SCALE.blocks, limit: 7, order };
					const first = await findTransfers(db(), { address: w.address, ...f }, page);
					const after = Object.keys(f).length === 0 ? (first.rows.at(-1)?.id as string | undefined) : undefined;
					const second = after ? await findTransfers(db(), { address: w.address, ...f }, { ...page, after }) : null;
					out.push([w.address, order, f, first, second]);
				}
				for (const f of [{}, { direction: "incoming" as const }, { counterparty: w.counterparty }]) {
					const page = { start: 150, end: SCALE.blocks - 50, limit: 9, order };
					out.push([w.address, order, f, await findWalletTransactions(db(), { address: w.address, ...f }, page)]);
				}
			}
			out.push([w.address, "balances", await tokenBalances(db(), w.address)]);
			out.push([w.address, "balances at 450", await tokenBalances(db(), w.address, 450)]);
		}
		for (const c of callers)
			for (const order of ["asc", "desc"] as const)
				for (const f of [{ caller: c.caller }, { caller: c.caller, origin: c.origin }]) {
					const page = { start: 0, end: SCALE.blocks, limit: 5, order };
					const first = await findCreations(db(), f, page);
					const after = first.rows.at(-1)?.id as string | undefined;
					out.push([c, order, first, after ? await findCreations(db(), f, { ...page, after }) : null]);
				}
		return JSON.parse(json(out));
	} finally {
		store.close();
	}
}

/** Whether the busiest wallet and the quiet ones are quiet in `dir`'s transfer records (isQuiet of Snapshot.keyRows). */
async function quiet(dir: string): Promise<boolean[]> {
	const store = await createStore(dir);
	try {
		const snap = store.snapshot(CHAIN.id);
		const asked = [wallets[0], ...wallets.slice(BUSIEST)] as { address: string }[];
		return await Promise.all(
			asked.map(async (w) => isQuiet(await snap.keyRows("wallet_transfers", w.address, [0, SCALE.blocks - 1]))),
		);
	} finally {
		store.close();
	}
}

/** `address`'s rows in each of `dir`'s wallet transfers files, as their key filters count them (Snapshot.keyRows). */
async function spans(dir: string, address: string) {
	const store = await createStore(dir);
	try {
		return await store.snapshot(CHAIN.id).keyRows("wallet_transfers", address, [0, SCALE.blocks - 1]);
	} finally {
		store.close();
	}
}

/**
 * Every block's stamp (Snapshot.blockStamps) from a store with room for `room` blocks' stamps,
 * asked in an order that makes it drop slices and read them again, as `number → [hash, timestamp]`.
 */
async function stampsWithRoomFor(dir: string, room: number): Promise<Record<number, [string, string]>> {
	const store = await createStore(dir, { maxStampedBlocks: room });
	try {
		const out: Record<number, [string, string]> = {};
		const numbers = Array.from({ length: SCALE.blocks }, (_, i) => i);
		// Oldest to newest, then newest to oldest, a few blocks a call.
		for (const order of [numbers, [...numbers].reverse()])
			for (let i = 0; i < order.length; i += 7) {
				const stamps = await store.snapshot(CHAIN.id).blockStamps(order.slice(i, i + 7));
				for (const [n, s] of stamps) out[n] = [s.hash, String(s.timestamp)];
			}
		return out;
	} finally {
		store.close();
	}
}

/** The blocks dataset's `number → [hash, timestamp]`, read by DuckDB from the files. */
async function blockRows(dir: string): Promise<Record<number, [string, string]>> {
	const m = await loadManifest(dir, CHAIN.id, CHAIN.number);
	const rows = await select(
		`SELECT number, hash, timestamp::VARCHAR AS ts FROM read_parquet([${listedFiles(dir, m, "blocks").map(q).join(", ")}])`,
	);
	expect(rows.length).toBe(SCALE.blocks);
	return Object.fromEntries(rows.map((r) => [Number(r.number), [String(r.hash), String(r.ts)]]));
}

/** A copy of `from` whose manifest lists none of `kinds` (its chunks and runs): readers use what is left. */
async function without(from: string, name: string, kinds: readonly IndexName[]): Promise<string> {
	const dir = join(root, name);
	await cp(from, dir, { recursive: true });
	const m = await loadManifest(dir, CHAIN.id, CHAIN.number);
	m.runs = (m.runs ?? []).filter((r) => !kinds.includes(r.index));
	for (const c of m.chunks) c.indexes = c.indexes?.filter((i) => !kinds.includes(i));
	await saveManifest(dir, m);
	return dir;
}

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), "chainlake-address-records-"));
	db = await DuckDBInstance.create(":memory:");
	const written = join(root, "written");
	await writeSynthChain({ scale: SCALE, chain: CHAIN, dataDir: written, partitionSize: SCALE.partitionSize });
	// The chunks after the holder ranks' without their balance deltas (as before the background
	// merges derive them): a wallet's balance then sums its transfers there, from the by-address index.
	const m = await loadManifest(written, CHAIN.id, CHAIN.number);
	// Ranked as a follower's folder is (its final block listed: the settled chunks only; synth ranks
	// every chunk of the folder it writes), so that chunks come after the ranks.
	m.final_through = Math.max(...m.chunks.map((c) => c.to)) - 64;
	delete m.ranks;
	const writer = await createParquetWriter();
	try {
		await ranksStep(writer, written, m);
	} finally {
		writer.close();
	}
	const ranked = Math.max(-1, ...((m as Manifest).ranks ?? []).map((r) => r.to));
	const newest = m.chunks.filter((c) => c.from > ranked);
	expect(newest.length).toBeGreaterThan(0);
	m.runs = (m.runs ?? []).filter((r) => r.index !== "erc20_balances" || r.to <= ranked);
	for (const c of newest) c.indexes = c.indexes?.filter((i) => i !== "erc20_balances");
	await saveManifest(written, m);
	fresh = written;

	const files = (index: IndexName) =>
		indexFiles(fresh, m, index)
			.flatMap((f) => partPaths(f.path, f.parts))
			.map(q)
			.join(", ");
	const transfers = `read_parquet([${files("wallet_transfers")}])`;
	const field = (k: string) => `record::JSON->>${q(`$[${k}]`)}`;
	// Busiest and quiet addresses, each with one transfer's counterparty, contract and origin.
	wallets = (
		await select(
			`WITH t AS (SELECT address, ${field("3")} AS sender, ${field("4")} AS recipient, ${field("2")} AS contract, ${field("1")} AS origin FROM ${transfers}),
			 n AS (SELECT address, count(*) AS n, min(CASE WHEN sender = address THEN recipient ELSE sender END) AS counterparty,
			              max(contract) AS contract, min(origin) AS origin FROM t GROUP BY address)
			 (SELECT * FROM n ORDER BY n DESC, address LIMIT ${BUSIEST}) UNION ALL (SELECT * FROM n WHERE n >= 2 ORDER BY n, address LIMIT ${QUIET})`,
		)
	).map((r) => ({
		address: String(r.address),
		counterparty: String(r.counterparty),
		contract: r.contract == null ? null : String(r.contract),
		origin: String(r.origin),
	}));
	expect(wallets.length).toBe(BUSIEST + QUIET);
	const creations = `read_parquet([${listedFiles(fresh, m, "contract_creations").map(q).join(", ")}])`;
	callers = (
		await select(
			`SELECT caller, min(origin) AS origin, count(*) AS n FROM ${creations} GROUP BY caller ORDER BY n DESC, caller LIMIT 3`,
		)
	).map((r) => ({ caller: String(r.caller), origin: String(r.origin) }));
	// (A factory with more than a page.)
	expect(callers.length).toBeGreaterThanOrEqual(2);
}, 240_000);

afterAll(async () => {
	db?.closeSync();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("by-address records", () => {
	it("a new folder lists them for every chunk, and not the whole-row kinds, with their filter columns, in small row groups", async () => {
		const m = await loadManifest(fresh, CHAIN.id, CHAIN.number);
		expect(m.chunks.length).toBeGreaterThan(1);
		for (const c of m.chunks) for (const [old] of PAIRS) expect(c.indexes).not.toContain(old);
		for (const index of RECORDS) {
			const files = indexFiles(fresh, m, index);
			// Every chunk's rows are in a file of its own or a run.
			const covered = files.reduce((n, f) => n + f.to - f.from + 1, 0);
			expect(covered, index).toBe(SCALE.blocks);
			for (const f of files)
				for (const part of partPaths(f.path, f.parts)) {
					const meta = await select(
						`SELECT path_in_schema AS col, compression, row_group_num_rows AS n, stats_min_value AS lo, stats_max_value AS hi FROM parquet_metadata(${q(part)})`,
					);
					expect(new Set(meta.map((r) => r.col))).toEqual(new Set(Object.keys(INDEXES[index].columns)));
					expect(meta.map((r) => r.col)).toContain("record");
					for (const r of meta) {
						expect(r.compression).toBe("ZSTD");
						// (A target, not a cap: DuckDB joins a short tail to the group before it.)
						expect(Number(r.n)).toBeLessThan(2 * INDEXES[index].rowGroupSize);
					}
					for (const r of meta.filter((x) => x.col === "address")) expect(String(r.lo) <= String(r.hi)).toBe(true);
				}
		}
	});

	it("answer every wallet page and balance as the whole-row indexes and the datasets do; reindex upgrades an older folder", async () => {
		// Both ways of reading a wallet are taken: the busiest window by window, the quiet ones at once.
		expect(await quiet(fresh)).toEqual([false, ...wallets.slice(BUSIEST).map(() => true)]);
		const now = await answers(fresh);
		// (They do list things: pages with rows, and balances.)
		expect((json(now).match(/"hasMore":true/g) ?? []).length).toBeGreaterThan(20);
		expect(json(now)).toContain('"raw":"');

		const plain = await without(fresh, "plain", [...PAIRS.flat(), ...WHOLE_ROWS.flat(), "wallet_creations"]);
		expect(await answers(plain)).toEqual(now);
		expect(await stampsWithRoomFor(fresh, 150)).toEqual(await blockRows(fresh));
		const oldest = await olderCopy(fresh, join(root, "oldest"), CHAIN, WHOLE_ROWS);
		expect(await answers(oldest)).toEqual(now);

		const older = await olderCopy(fresh, join(root, "older"), CHAIN, PAIRS);
		const before = await loadManifest(older, CHAIN.id, CHAIN.number);
		for (const c of before.chunks) {
			expect(c.indexes).toContain("transfer_records_by_address");
			expect(c.indexes).not.toContain("wallet_transfers");
		}
		expect(await answers(older)).toEqual(now);

		await reindexChain(older, CHAIN);
		const after = await loadManifest(older, CHAIN.id, CHAIN.number);
		for (const c of after.chunks) {
			for (const [old, records] of PAIRS) {
				expect(c.indexes).not.toContain(old);
				expect(indexFiles(older, after, records).some((f) => f.from <= c.from && c.to <= f.to)).toBe(true);
			}
		}
		expect(after.runs?.some((r) => r.index === "transfer_records_by_address")).toBeFalsy();
		const listed = listedPaths(older, after);
		for (const [old] of PAIRS) for (const f of indexFiles(older, before, old)) expect(listed.has(f.path)).toBe(false);
		expect(await answers(older)).toEqual(now);
		const report = await verifyChain(older, CHAIN.id);
		expect(report.manifestError).toBeNull();
		expect(report.problems).toEqual([]);
	}, 240_000);

	it("reindex adds the busy keys and their rows to key filters written without them, and the pages stay the same", async () => {
		const dir = join(root, "unlisted-busy");
		await cp(fresh, dir, { recursive: true });
		const m = await loadManifest(dir, CHAIN.id, CHAIN.number);
		// Each by-address filter cut back to its header and bits, as written before the list; the
		// wallet transfers' filters keep a list of the busy keys without their rows, as written
		// before the counts.
		for (const index of RECORDS)
			for (const f of indexFiles(dir, m, index)) {
				const filter = await loadKeyFilter(f.filter as string);
				const data = await readFile(f.filter as string);
				const bits = data.subarray(0, 12 + Math.ceil(data.readUInt32LE(4) / 8));
				const listed = index === "wallet_transfers" ? withBusyKeys(bits, [...(filter.busy ?? [])].sort()) : bits;
				await writeFile(f.filter as string, listed);
			}
		expect(await quiet(dir)).toEqual([false, ...wallets.slice(BUSIEST).map(() => true)]);
		const busiest = (wallets[0] as { address: string }).address;
		expect(await spans(dir, busiest)).toBeNull();
		const answered = await answers(dir);
		await reindexChain(dir, CHAIN);
		expect(await quiet(dir)).toEqual(await quiet(fresh));
		const counted = await spans(dir, busiest);
		expect(counted).toEqual(await spans(fresh, busiest));
		expect(counted?.some((s) => typeof s.rows === "number" && s.rows > (INDEXES.wallet_transfers.busyRows ?? 0))).toBe(
			true,
		);
		expect(await answers(dir)).toEqual(answered);
	}, 240_000);
});
