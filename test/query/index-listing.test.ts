import { readFileSync, writeFileSync } from "node:fs";
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ListResult, Page } from "../../src/query/list.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Params, Snapshot, Store } from "../../src/query/store/store.js";
import { findWalletTransactions } from "../../src/query/transactions.js";
import { type AssetFilter, findTransfers } from "../../src/query/transfers.js";
import { createParquetWriter } from "../../src/store/files/parquet-writer.js";
import { INDEX_NAMES, INDEXES, type IndexDef } from "../../src/store/format/indexes.js";
import { manifestPath } from "../../src/store/format/layout.js";
import type { Manifest } from "../../src/store/format/records.js";
import { writeKeyFilter } from "../../src/store/indexes/key-filter.js";
import { indexFiles } from "../../src/store/indexes/listing.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * Wallet lists read through the index files (src/query/list.ts picks them where every chunk of a
 * window has them) must equal a plain DuckDB query over the dataset files, page by page: the ids
 * in order and has_more, for every workload address, direction and counterparty, both orders,
 * limits 1, 2, 3, 7 and 1000, paging with `after` to the end, over the whole history and over
 * ranges that cut through chunks. The same query layer over a copy of the folder whose manifest
 * lists no indexes (the fallback), and over one that lists them for every other chunk only
 * (windows mixing both), and over one whose key filters list nearly every wallet as busy with its
 * rows (windows sized by them), must give the very same rows; a token's transfers (read from
 * `token_transfers` by contract) the same. By default each case is listed with the
 * limits and copies planOf gives (every limit for the address on either side); set
 * CHAINLAKE_INDEX_MATRIX=full for every limit of every case through every copy.
 *
 * Partitions are 8 blocks, so a wallet's history spans many chunks and the windowed listing
 * (1, 2, 4, ... chunks at a time) goes through several windows.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const LIMITS = [1, 2, 3, 7, 1000];
const ORDERS = ["asc", "desc"] as const;
const ZERO = `0x${"0".repeat(40)}`;
const NOBODY = `0x${"7".repeat(40)}`;

let anvil: AnvilInstance;
let work: WorkloadResult;
let root: string;
let head: number;
let addresses: string[];
/** The stores under test: indexes everywhere, none (fallback), and every other chunk. */
let stores: { name: string; store: Store }[];
let reference: DuckDBInstance;
let refFiles: { transfers: string; transactions: string };
let calls = 0;

const rpc = (method: string, params: unknown[]) => nodeCall(anvil.url, method, params);

/** Rewrites a copy's manifest: `keep(i)` says whether chunk i keeps its `indexes`. */
async function copyWithIndexes(from: string, to: string, keep: (i: number) => boolean) {
	await cp(from, to, { recursive: true });
	const path = manifestPath(to, CHAIN_ID);
	const m = JSON.parse(readFileSync(path, "utf8")) as Manifest;
	m.chunks.forEach((c, i) => {
		if (!keep(i)) delete c.indexes;
	});
	writeFileSync(path, `${JSON.stringify(m, null, 1)}\n`);
	return m;
}

/**
 * A copy whose by-address key filters list every key with more than one row in a file as busy,
 * with its rows: a wallet's pages are then read in windows sized by those counts
 * (query/list.ts windowSizer), where this small chain's wallets are otherwise all quiet.
 */
async function copyWithBusyKeys(from: string, to: string) {
	await cp(from, to, { recursive: true });
	const m = JSON.parse(readFileSync(manifestPath(to, CHAIN_ID), "utf8")) as Manifest;
	const writer = await createParquetWriter();
	process.env.CHAINLAKE_BUSY_ROWS = "1";
	try {
		for (const index of INDEX_NAMES)
			if ((INDEXES[index] as IndexDef).busyRows !== undefined)
				for (const f of indexFiles(to, m, index)) await writeKeyFilter(writer, f.path, index, f.parts);
	} finally {
		delete process.env.CHAINLAKE_BUSY_ROWS;
		writer.close();
	}
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	work = await runWorkload({ rpcUrl: anvil.url });
	// A little more history on top of the workload, one block a transaction: a self-transfer (one
	// index row, not two), a zero-value transaction (no transfer) and transfers among the accounts.
	const a = work.accounts;
	// Each mined before the next is sent (sendMined), so none share a block.
	await sendMined(anvil.url, { from: a.alice, to: a.alice, value: "0x7" });
	await sendMined(anvil.url, { from: a.bob, to: a.carol, value: "0x0" });
	for (const [from, to] of [
		[a.carol, a.alice],
		[a.dave, a.bob],
		[a.alice, a.deployer],
		[a.bob, a.alice],
	] as const) {
		await sendMined(anvil.url, { from, to, value: "0x3" });
	}
	expect(Number(await rpc("eth_blockNumber", []))).toBe(work.lastBlock + 6);
	root = await mkdtemp(join(tmpdir(), "chainlake-index-listing-"));
	const indexed = join(root, "indexed");
	// No Delta Lake logs: nothing here reads them, and they are a good part of each chunk's save.
	await backfillInto(indexed, anvil.url, CHAIN, { traces: "parity", partitionSize: 8, lake: { delta: false } });
	await copyWithIndexes(indexed, join(root, "plain"), () => false);
	const mixed = await copyWithIndexes(indexed, join(root, "mixed"), (i) => i % 2 === 0);
	expect(mixed.chunks.length).toBeGreaterThanOrEqual(5);
	// The head as stored (the node's eth_blockNumber may run a block behind the last mined one).
	head = Math.max(...mixed.chunks.map((c) => c.to));
	expect(head).toBeGreaterThanOrEqual(work.lastBlock + 6);
	await copyWithBusyKeys(indexed, join(root, "busy"));
	stores = [
		{ name: "indexed", store: await createStore(indexed) },
		{ name: "plain", store: await createStore(join(root, "plain")) },
		{ name: "mixed", store: await createStore(join(root, "mixed")) },
		{ name: "busy", store: await createStore(join(root, "busy")) },
	];
	addresses = [...Object.values(work.accounts), ...Object.values(work.contracts), ZERO, NOBODY];
	reference = await DuckDBInstance.create(":memory:");
	const glob = (d: string) => `'${join(indexed, CHAIN_ID, d)}/*.parquet'`;
	refFiles = { transfers: glob("transfers"), transactions: glob("transactions") };
});

afterAll(async () => {
	for (const s of stores ?? []) s.store.close();
	reference?.closeSync();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

/** The reference: every matching id in chain order, by a plain query over the dataset files. */
async function referenceIds(sql: string, params: Params): Promise<string[]> {
	const conn = await reference.connect();
	try {
		const r = await conn.runAndReadAll(sql, params);
		return r.getRowObjectsJS().map((row) => String(row.id));
	} finally {
		conn.closeSync();
	}
}

type Lister = (db: Snapshot, page: Page) => Promise<ListResult>;

/** Every page from the first to the one without has_more. */
async function allPages(store: Store, list: Lister, base: Omit<Page, "after">) {
	const pages: ListResult[] = [];
	let after: string | undefined;
	for (let guard = 0; guard < 500; guard++) {
		calls++;
		const page = await list(store.snapshot(CHAIN_ID), { ...base, after });
		pages.push(page);
		if (!page.hasMore) return pages;
		after = String(page.rows.at(-1)?.id);
	}
	throw new Error("paging did not end");
}

/** The pages `ids` (in the page's order) must come in: `limit` at a time, has_more on all but the last. */
function expectedPages(ids: string[], limit: number) {
	const out: { ids: string[]; hasMore: boolean }[] = [];
	for (let i = 0; i === 0 || i < ids.length; i += limit) {
		out.push({ ids: ids.slice(i, i + limit), hasMore: i + limit < ids.length });
	}
	return out;
}

/**
 * Lists with both orders and each of `limits`, paging to the end, through each of `through`
 * (the stores, at once), against the reference ids.
 */
async function checkAll(
	label: string,
	list: Lister,
	ascIds: string[],
	range: { start: number; end: number },
	{ limits = LIMITS, through = EVERY } = {},
) {
	for (const order of ORDERS) {
		const ids = order === "asc" ? ascIds : [...ascIds].reverse();
		for (const limit of limits) {
			const want = expectedPages(ids, limit);
			const chosen = stores.filter((s) => through.includes(s.name));
			const got = await Promise.all(chosen.map((s) => allPages(s.store, list, { ...range, limit, order })));
			for (const [k, pages] of got.entries()) {
				const where = `${label} ${order} limit ${limit} via ${chosen[k]?.name}`;
				expect(
					pages.map((p) => ({ ids: p.rows.map((r) => String(r.id)), hasMore: p.hasMore })),
					where,
				).toEqual(want);
				// Whole rows, not just ids, are the same whichever files they came from.
				expect(pages, where).toEqual(got[0]);
			}
		}
	}
}

type Range = { name: string; start: number; end: number };
const WHOLE = (): Range => ({ name: "whole history", start: 0, end: head });
/** Ranges that cut through chunks at both ends (partitions of 8: 0..7, 8..15, ...). */
const CUTS = (): Range[] => [
	{ name: `blocks 5..${head - 3}`, start: 5, end: head - 3 },
	{ name: "blocks 11..29", start: 11, end: 29 },
];

/** SQL of the reference for one side-filter: address on either side, or one of them, and a counterparty. */
function sides(
	[a, b]: readonly [string, string],
	direction: "incoming" | "outgoing" | undefined,
	counterparty: string | undefined,
): string {
	const mine =
		direction === "outgoing"
			? `${a} = $address`
			: direction === "incoming"
				? `${b} = $address`
				: `(${a} = $address OR ${b} = $address)`;
	if (!counterparty) return mine;
	const theirs =
		direction === "outgoing"
			? `${b} = $cp`
			: direction === "incoming"
				? `${a} = $cp`
				: `((${a} = $address AND ${b} = $cp) OR (${b} = $address AND ${a} = $cp))`;
	return `${mine} AND ${theirs}`;
}

/** The address `address` has exchanged most rows with (the busiest counterparty), if any. */
async function counterpartyOf(address: string, table: string, [a, b]: readonly [string, string]) {
	const conn = await reference.connect();
	try {
		const r = await conn.runAndReadAll(
			`SELECT other, count(*) AS n FROM (SELECT ${b} AS other FROM ${table} WHERE ${a} = $address UNION ALL SELECT ${a} FROM ${table} WHERE ${b} = $address)
			 WHERE other IS NOT NULL AND other <> $address GROUP BY other ORDER BY n DESC, other LIMIT 1`,
			{ address },
		);
		return r.getRowObjectsJS().map((row) => String(row.other));
	} finally {
		conn.closeSync();
	}
}

const DIRECTIONS = [undefined, "incoming", "outgoing"] as const;
type Direction = (typeof DIRECTIONS)[number];

/** Which limits and copies a case is listed with (every pair of an order and a limit is paged to the end). */
type Plan = { limits: number[]; through: string[] }[];
const BOTH_PATHS = ["indexed", "plain"];
/** The same with the copy whose wallets are all busy (sized windows). */
const WITH_BUSY = [...BOTH_PATHS, "busy"];
const EVERY = ["indexed", "plain", "mixed", "busy"];

/**
 * The plan of a case. With CHAINLAKE_INDEX_MATRIX=full, the whole matrix: every case, every limit,
 * through every copy (about 2 minutes on 2 busy cores). Otherwise, for the addresses sampleOf
 * picks: every limit through the indexed and plain copies for the address on either side over
 * the whole history (the mixed copy at limits 3 and 1000, the busy one at 2, 7 and 1000), fewer
 * limits for the rest, each direction and counterparty through the busy copy too (filters that
 * keep few of a busy key's rows make its windows grow); for the others, limits 3 and 1000 through
 * the indexed and plain copies, 1000 through the busy one (5-7 s a list kind alone here).
 */
function planOf(direction: Direction, counterparty: string | undefined, range: string, sampled: boolean): Plan {
	if (process.env.CHAINLAKE_INDEX_MATRIX === "full") return [{ limits: LIMITS, through: EVERY }];
	if (!sampled)
		return [
			{ limits: [3, 1000], through: BOTH_PATHS },
			{ limits: [1000], through: ["busy"] },
		];
	if (counterparty === NOBODY) return [{ limits: [1000], through: EVERY }];
	if (counterparty) return [{ limits: [2, 1000], through: WITH_BUSY }];
	if (direction) return [{ limits: [3, 1000], through: WITH_BUSY }];
	if (range === CUTS()[0]?.name) return [{ limits: [2, 7, 1000], through: WITH_BUSY }];
	if (range === CUTS()[1]?.name) return [{ limits: [3, 1000], through: EVERY }];
	return [
		{ limits: LIMITS, through: BOTH_PATHS },
		{ limits: [2, 7, 1000], through: ["busy"] },
		{ limits: [3, 1000], through: ["mixed"] },
	];
}

/**
 * Which addresses get every case of planOf: under CHAINLAKE_CRASH_FULL=1 (npm run test:long, which
 * CI runs) or CHAINLAKE_INDEX_MATRIX=full all of them; by default the busiest, the median and the
 * quietest address with rows, and the zero address (mints and burns); the others are listed over
 * the whole history and the cuts at two limits (each path's code is the same for every address).
 */
function sampleOf(rowsOf: Map<string, number>): Set<string> {
	const every = process.env.CHAINLAKE_CRASH_FULL === "1" || process.env.CHAINLAKE_INDEX_MATRIX === "full";
	if (every) return new Set(rowsOf.keys());
	const busy = [...rowsOf].filter(([, n]) => n > 0).sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0]));
	const picks = [busy[0], busy[Math.floor(busy.length / 2)], busy.at(-1)].map((e) => e?.[0]);
	return new Set([...picks.filter((a): a is string => a !== undefined), ZERO]);
}

/**
 * One kind of wallet list against the reference: every address on either side, over the whole
 * history and over ranges cutting through chunks; for an address with rows, also each direction
 * and each counterparty (the busiest, and one never seen) in every direction; listed as planOf
 * says (the addresses sampleOf leaves out: the whole history and the cuts only). Returns how many
 * cases had rows.
 */
async function matrix(
	table: string,
	columns: readonly [string, string],
	extra: string,
	list: (address: string, direction: Direction, counterparty: string | undefined) => Lister,
) {
	let nonEmpty = 0;
	const started = performance.now();
	calls = 0;
	const full = process.env.CHAINLAKE_INDEX_MATRIX === "full";
	const rowsOf = new Map<string, number>();
	for (const address of addresses) {
		const all = await referenceIds(
			`SELECT id FROM read_parquet(${table}) WHERE ${sides(columns, undefined, undefined)}${extra}`,
			{ address },
		);
		rowsOf.set(address, all.length);
	}
	const sample = sampleOf(rowsOf);
	const check = async (address: string, direction: Direction, counterparty: string | undefined, range: Range) => {
		const ids = await referenceIds(
			`SELECT id FROM read_parquet(${table}) WHERE ${sides(columns, direction, counterparty)}${extra}
			 AND block_number BETWEEN $start AND $end ORDER BY id`,
			{ address, start: range.start, end: range.end, ...(counterparty ? { cp: counterparty } : {}) },
		);
		if (ids.length > 0) nonEmpty++;
		const label = `${address} ${direction ?? "either side"} counterparty ${counterparty ?? "-"} ${range.name}`;
		for (const p of planOf(direction, counterparty, range.name, sample.has(address))) {
			await checkAll(label, list(address, direction, counterparty), ids, range, p);
		}
		return ids.length;
	};
	for (const address of addresses) {
		const rows = await check(address, undefined, undefined, WHOLE());
		for (const range of CUTS()) await check(address, undefined, undefined, range);
		if ((rows === 0 && !full) || !sample.has(address)) continue;
		const cps = [undefined, ...(await counterpartyOf(address, table, columns)), NOBODY];
		for (const direction of DIRECTIONS) {
			for (const counterparty of cps) {
				if (direction || counterparty) await check(address, direction, counterparty, WHOLE());
			}
		}
	}
	console.log(`${calls} pages listed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
	return nonEmpty;
}

const ALL_ASSETS: AssetFilter[] = ["native", "ft", "nft"];

describe("wallet listing through the index files", () => {
	it("reads the index files where the manifest lists them", async () => {
		// A copy whose index files are emptied (still listed): a wallet's lists come out empty,
		// so the query layer does read them (and the other cases compare two real paths).
		const emptied = join(root, "emptied");
		await cp(join(root, "indexed"), emptied, { recursive: true });
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		for (const i of ["wallet_transfers", "wallet_transactions"]) {
			for (const f of (await readdir(join(emptied, CHAIN_ID, i))).filter((n) => n.endsWith(".parquet"))) {
				const path = join(emptied, CHAIN_ID, i, f);
				await conn.run(`COPY (SELECT * FROM read_parquet('${path}') WHERE false) TO '${path}.new' (FORMAT parquet)`);
				await cp(`${path}.new`, path);
				await rm(`${path}.new`);
			}
		}
		conn.closeSync();
		db.closeSync();
		const store = await createStore(emptied);
		try {
			const page: Page = { start: 0, end: head, limit: 100, order: "asc" };
			const alice = work.accounts.alice;
			const real = stores[0]?.store as Store;
			expect((await findTransfers(real.snapshot(CHAIN_ID), { address: alice }, page)).rows.length).toBeGreaterThan(10);
			expect((await findTransfers(store.snapshot(CHAIN_ID), { address: alice }, page)).rows).toEqual([]);
			expect((await findWalletTransactions(store.snapshot(CHAIN_ID), { address: alice }, page)).rows).toEqual([]);
			// Lists that are not a wallet's read the dataset files: unaffected.
			const token = work.contracts.token20;
			const ids = async (s: Store) =>
				(await findTransfers(s.snapshot(CHAIN_ID), { token }, page)).rows.map((r) => r.id);
			expect(await ids(store)).toEqual(await ids(real));
			expect((await ids(real)).length).toBeGreaterThan(3);
		} finally {
			store.close();
		}
	});

	it("a page over every block the chain holds reads without a block condition; a narrower one keeps it", async () => {
		// Each statement's text, as the store is asked it (query/list.ts leaves the condition out
		// when the window holds every file's rows; the matrix below checks those pages' rows).
		const store = stores.find((s) => s.name === "indexed")?.store as Store;
		const texts: string[] = [];
		const noting = (): Snapshot => {
			const snap = store.snapshot(CHAIN_ID);
			const query: Snapshot["query"] = (sql, params, window, key) => {
				texts.push(sql);
				return snap.query(sql, params, window, key);
			};
			return Object.assign(Object.create(snap) as Snapshot, { query });
		};
		const alice = work.accounts.alice;
		const pageOf = (start: number, end: number): Page => ({ start, end, limit: 1000, order: "asc" });
		const whole = await findTransfers(noting(), { address: alice }, pageOf(0, head));
		expect(whole.rows.length).toBeGreaterThan(10);
		expect(texts.length).toBeGreaterThan(0);
		expect(texts.filter((t) => t.includes("BETWEEN"))).toEqual([]);
		// From block 1, or up to the block before the head: the files hold blocks outside the window.
		for (const [start, end] of [
			[1, head],
			[0, head - 1],
		] as const) {
			texts.length = 0;
			const cut = await findTransfers(noting(), { address: alice }, pageOf(start, end));
			expect(texts.length).toBeGreaterThan(0);
			expect(texts.every((t) => t.includes("block_number BETWEEN $start AND $end"))).toBe(true);
			const inside = whole.rows.filter((r) => Number(r.block_number) >= start && Number(r.block_number) <= end);
			expect(cut.rows.map((r) => r.id)).toEqual(inside.map((r) => r.id));
		}
	});

	it("the busy copy's filters count its wallets' rows, so their pages take sized windows", async () => {
		const alice = work.accounts.alice;
		const spans = async (name: string) => {
			const store = stores.find((s) => s.name === name)?.store as Store;
			return store.snapshot(CHAIN_ID).keyRows("wallet_transfers", alice, [0, head]);
		};
		const busy = (await spans("busy")) ?? [];
		// Counted in several files (more than one row each), and quiet in every file of the others.
		expect(busy.filter((s) => typeof s.rows === "number" && s.rows > 1).length).toBeGreaterThan(2);
		expect((await spans("indexed"))?.every((s) => s.rows === 0 || s.rows === "few")).toBe(true);
	});

	it("pages oldest first in the files' order, and still right where a file's rows are out of order", async () => {
		// A copy whose wallet_transfers files hold each wallet's rows newest first (as another tool
		// might write them): a page read in the files' order comes out of order and is read again
		// with ORDER BY, so its pages are the reference's all the same.
		const shuffled = join(root, "newest-first");
		await cp(join(root, "indexed"), shuffled, { recursive: true });
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		const dir = join(shuffled, CHAIN_ID, "wallet_transfers");
		for (const f of (await readdir(dir)).filter((n) => n.endsWith(".parquet"))) {
			const path = join(dir, f);
			await conn.run(
				`COPY (SELECT * FROM read_parquet('${path}') ORDER BY address, id DESC) TO '${path}.new' (FORMAT parquet)`,
			);
			await cp(`${path}.new`, path);
			await rm(`${path}.new`);
		}
		conn.closeSync();
		db.closeSync();
		const store = await createStore(shuffled);
		stores.push({ name: "newest-first", store });
		try {
			const alice = work.accounts.alice;
			const ids = await referenceIds(
				`SELECT id FROM read_parquet(${refFiles.transfers}) WHERE ${sides(["sender", "recipient"], undefined, undefined)} AND asset_type IN ('native', 'ft', 'nft') ORDER BY id`,
				{ address: alice },
			);
			expect(ids.length).toBeGreaterThan(10);
			const list: Lister = (db, page) => findTransfers(db, { address: alice, assets: ALL_ASSETS }, page);
			await checkAll(`${alice} newest first in its files`, list, ids, WHOLE(), {
				limits: [1, 3, 1000],
				through: ["indexed", "newest-first"],
			});
		} finally {
			stores.pop();
			store.close();
		}
	});

	it("a token's transfers (token_transfers) equal the plain query, with each asset filter and a token id", async () => {
		const tokens = [work.contracts.token20, work.contracts.token721, work.contracts.token1155, NOBODY];
		let nonEmpty = 0;
		calls = 0;
		for (const token of tokens) {
			for (const [assets, condition] of [
				[["ft", "nft"], "asset_type IN ('ft', 'nft')"],
				[["nft"], "asset_type = 'nft'"],
				[["multi"], "token_standard = 'erc1155'"],
			] as const)
				for (const range of [WHOLE(), ...CUTS()]) {
					const ids = await referenceIds(
						`SELECT id FROM read_parquet(${refFiles.transfers}) WHERE contract = $token AND ${condition}
						 AND block_number BETWEEN $start AND $end ORDER BY id`,
						{ token, start: range.start, end: range.end },
					);
					if (ids.length > 0) nonEmpty++;
					const list: Lister = (db, page) => findTransfers(db, { token, assets: [...assets] }, page);
					await checkAll(`token ${token} ${assets} ${range.name}`, list, ids, range, { limits: [2, 7, 1000] });
				}
			// A token id: a record field, read through the records' relation.
			const [first] = await referenceIds(
				`SELECT token_id AS id FROM read_parquet(${refFiles.transfers}) WHERE contract = $token AND token_id IS NOT NULL ORDER BY id LIMIT 1`,
				{ token },
			);
			if (first === undefined) continue;
			const ids = await referenceIds(
				`SELECT id FROM read_parquet(${refFiles.transfers}) WHERE contract = $token
				 AND (token_id = $tid OR list_contains(batch_token_ids, $tid)) ORDER BY id`,
				{ token, tid: first },
			);
			expect(ids.length).toBeGreaterThan(0);
			const list: Lister = (db, page) => findTransfers(db, { token, tokenId: first }, page);
			await checkAll(`token ${token} id ${first}`, list, ids, WHOLE(), { limits: [1, 1000] });
		}
		expect(nonEmpty).toBeGreaterThan(8);
	});

	it("findTransfers (asset types native, ft, nft) equals the plain query", async () => {
		const nonEmpty = await matrix(
			refFiles.transfers,
			["sender", "recipient"],
			" AND asset_type IN ('native', 'ft', 'nft')",
			(address, direction, counterparty) => (db, page) =>
				findTransfers(db, { address, direction, counterparty, assets: ALL_ASSETS }, page),
		);
		expect(nonEmpty).toBeGreaterThan(40);
	});

	it("findTransfers equals the plain query for each asset type alone", async () => {
		const kinds: [AssetFilter, string][] = [
			["native", "asset_type = 'native'"],
			["ft", "asset_type = 'ft'"],
			["nft", "asset_type = 'nft'"],
			["multi", "token_standard = 'erc1155'"],
		];
		const seen = new Set<string>();
		const range = WHOLE();
		for (const address of addresses) {
			const any = await referenceIds(
				`SELECT id FROM read_parquet(${refFiles.transfers}) WHERE sender = $address OR recipient = $address`,
				{ address },
			);
			if (any.length === 0) continue; // (lists of addresses without transfers are checked above)
			for (const [asset, condition] of kinds) {
				const ids = await referenceIds(
					`SELECT id FROM read_parquet(${refFiles.transfers}) WHERE (sender = $address OR recipient = $address) AND ${condition}
					 AND block_number BETWEEN $start AND $end ORDER BY id`,
					{ address, start: range.start, end: range.end },
				);
				if (ids.length > 0) seen.add(asset);
				const run: Lister = (db, page) => findTransfers(db, { address, assets: [asset] }, page);
				await checkAll(`${address} ${asset}`, run, ids, range, { limits: [2, 1000], through: BOTH_PATHS });
			}
		}
		expect([...seen].sort()).toEqual(["ft", "multi", "native", "nft"]);
	});

	it("findWalletTransactions equals the plain query", async () => {
		const nonEmpty = await matrix(
			refFiles.transactions,
			["from_address", "to_address"],
			"",
			(address, direction, counterparty) => (db, page) =>
				findWalletTransactions(db, { address, direction, counterparty }, page),
		);
		expect(nonEmpty).toBeGreaterThan(40);
	});
});
