import { existsSync } from "node:fs";
import { cp, mkdtemp, readFile, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { encodeDeployData, encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tokenBalances, tokenBalancesPage } from "../../src/query/balances.js";
import { type Holder, tokenHolders } from "../../src/query/holders.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Snapshot, Store } from "../../src/query/store/store.js";
import { saveManifest } from "../../src/store/delta/save-manifest.js";
import { createParquetWriter } from "../../src/store/files/parquet-writer.js";
import { amountOfParts, LIMBS, PARTS } from "../../src/store/format/amounts.js";
import { manifestPath } from "../../src/store/format/layout.js";
import { rankFiles, readManifestSafe } from "../../src/store/format/manifest.js";
import type { Manifest } from "../../src/store/format/records.js";
import { headRanksDue, headRanksStep, usableHeadRanks } from "../../src/store/holdings/head-ranks.js";
import { rankable, ranksDue, ranksStep, usableRanks } from "../../src/store/holdings/holder-ranks.js";
import { indexFiles } from "../../src/store/indexes/listing.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { compileContracts } from "../../src/workload/compile.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { holderPages } from "../helpers/holder-pages.js";
import { nodeCall, receiptBlock, sendMined } from "../helpers/node-rpc.js";

/**
 * Holder ranks (src/store/holder-ranks.ts): a token's holders read from the ranked balances at a
 * settled block plus what changed after it must be the very page that summing every index file
 * gives, at the head and at blocks after and before the ranks' block, page by page, while the
 * unsettled tail reorders the top (a small holder receives the largest amount, the largest
 * holder sends everything away). The same for each wallet's balances, read from the ranks' rows
 * by holder. Real anvil chain, real backfill, real Parquet.
 */
const CHAIN = 31337;
const ERC20 = parseAbi(["function transfer(address, uint256) returns (bool)", "function mint(address, uint256)"]);
let anvil: AnvilInstance;
let root: string;
let store: Store;
let token: string;
let m: Manifest;
/** Receives 10^40 in the unsettled tail, and sends all but 1 of it on to the deployer later in it. */
let receiver: string;
/** A second token, held by four wallets from the settled history on. */
let token2: string;
/** Sends all its `token2` away in the tail. */
let emptied: string;
/** The tail's second block, a chunk's last. */
let tailMid: number;
const dir = () => join(root, "lake");
const tipDir = () => join(root, "tip");

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const send = (from: string, to: string, amount: bigint, contract = token) =>
	sendMined(anvil.url, {
		from,
		to: contract,
		data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [to as `0x${string}`, amount] }),
	});

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	const workload = await runWorkload({ rpcUrl: anvil.url });
	token = workload.contracts.token20.toLowerCase();
	const accounts = ((await rpc("eth_accounts")) as string[]).map((a) => a.toLowerCase());
	const deployer = workload.accounts.deployer.toLowerCase();
	// Settled history: amounts spread over eight holders, some equal (ties order by address).
	for (let i = 0; i < 24; i++) await send(deployer, accounts[2 + (i % 8)] as string, 10n ** BigInt(18 + (i % 5)));
	// A second token, so that some wallets have two ranked tokens; one of them sends all of it
	// away in the tail (a ranked token netting to zero inside a wallet's page).
	const t20 = (await compileContracts()).Token20 as { abi: readonly unknown[]; bytecode: `0x${string}` };
	const created = await rpc("eth_sendTransaction", [
		{ from: deployer, data: encodeDeployData({ abi: t20.abi, bytecode: t20.bytecode, args: ["Second", "SEC"] }) },
	]);
	await receiptBlock(anvil.url, created);
	token2 = (
		(await rpc("eth_getTransactionReceipt", [created])) as { contractAddress: string }
	).contractAddress.toLowerCase();
	for (const to of accounts.slice(2, 6))
		await sendMined(anvil.url, {
			from: deployer,
			to: token2,
			data: encodeFunctionData({ abi: ERC20, functionName: "mint", args: [to as `0x${string}`, 7n * 10n ** 18n] }),
		});
	await rpc("anvil_mine", ["0x50"]);
	// The unsettled tail (the last 64 blocks): reorders the top. Its first two blocks end a chunk
	// (partitions of 4), the next two begin another: head ranks are built between them.
	const next = Number(await rpc("eth_blockNumber")) + 1;
	if ((6 - (next % 4)) % 4 > 0) await rpc("anvil_mine", [`0x${((6 - (next % 4)) % 4).toString(16)}`]);
	receiver = accounts[9] as string;
	await send(deployer, receiver, 10n ** 40n);
	tailMid = await send(accounts[6] as string, accounts[8] as string, 10n ** 22n);
	await send(accounts[3] as string, accounts[1] as string, 5n);
	await send(accounts[2] as string, accounts[7] as string, 7n * 10n ** 18n, token2);
	emptied = accounts[2] as string;
	// The top holding at the head ranks' block (built between the tail's second and third blocks)
	// drops to the bottom, and another moves up to the top: a first page must look past both.
	await send(receiver, deployer, 10n ** 40n - 1n);
	root = await mkdtemp(join(tmpdir(), "chainlake-ranks-"));
	// No Delta Lake logs: nothing here reads them, and they are a good part of each chunk's save.
	await backfillInto(dir(), anvil.url, CHAIN, { partitionSize: 4, traces: "parity", lake: { delta: false } });
	// A folder no follower keeps is ranked to its tip: kept as it is for the tests of that.
	await cp(dir(), tipDir(), { recursive: true });
	// This one as a follower keeps it (its final block listed): ranked over the settled prefix, with
	// an unsettled tail of changes after the ranks' block.
	const followed = readManifestSafe(dir(), `eip155-${CHAIN}`) as Manifest;
	followed.final_through = Math.max(...followed.chunks.map((c) => c.to)) - 64;
	delete followed.ranks;
	const writer = await createParquetWriter();
	try {
		await ranksStep(writer, dir(), followed);
	} finally {
		writer.close();
	}
	m = JSON.parse(await readFile(manifestPath(dir(), `eip155-${CHAIN}`), "utf8")) as Manifest;
	// Every token's pages through the ranks (by default only tokens with thousands of holdings,
	// which this chain has none of; the last test checks that choice).
	store = await createStore(dir(), { ranksMinHoldings: 0 });
}, 300_000);
afterAll(async () => {
	store?.close();
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

/** `db` with its ranks hidden: every holding summed from the index files, as before ranks. */
const withoutRanks = (db: Snapshot): Snapshot => ({ ...db, ranks: () => null, headRanks: () => null });

/** Every holder of the token (or `of`) as of `at`, paged `limit` at a time (holderPages). */
const allPages = (db: Snapshot, limit: number, at?: number, of = token, headTailMax?: number): Promise<Holder[]> =>
	holderPages(db, of, limit, at, headTailMax);

describe("holder ranks", () => {
	it("in a folder no follower keeps reach its tip; a page there is their rows, in key-range parts, as summing gives", async () => {
		const chain = `eip155-${CHAIN}`;
		const tip = readManifestSafe(tipDir(), chain) as Manifest;
		const head = Math.max(...tip.chunks.map((c) => c.to));
		// Written by the backfill at its end, over every chunk.
		expect(rankable(tip)?.to).toBe(head);
		expect(tip.ranks?.[0]).toMatchObject({ from: 0, to: head });
		expect(usableRanks(tipDir(), tip)).toEqual(tip.ranks?.[0]);
		expect(ranksDue(tipDir(), tip)).toBe(false);
		// Rebuilt with a few holdings a part, so that a token's ranked rows are in one of several files.
		delete tip.ranks;
		process.env.CHAINLAKE_PART_ROWS = "3";
		const writer = await createParquetWriter();
		try {
			expect(await ranksStep(writer, tipDir(), tip)).not.toBeNull();
		} finally {
			writer.close();
			delete process.env.CHAINLAKE_PART_ROWS;
		}
		const parts = (tip as Manifest).ranks?.[0]?.rankParts ?? 0;
		expect(parts).toBeGreaterThan(1);
		const files = rankFiles(tipDir(), tip, "erc20_ranks");
		expect(files).toHaveLength(parts);
		for (const f of files) expect(existsSync(f), f).toBe(true);
		// By default (ranksMinHoldings) neither token is ranked here, yet at the head every page is read
		// from the ranks: the same pages, cursors included, as summing every index file.
		const s = await createStore(tipDir());
		try {
			const db = () => s.snapshot(chain);
			expect(db().ranks()?.to).toBe(head);
			expect(await db().ranked(token)).toBe(false);
			for (const t of [token, token2]) {
				const pages = (d: Snapshot, limit: number) => holderPages(d, t, limit);
				const whole = await pages(withoutRanks(db()), 1000);
				expect(whole.length).toBeGreaterThan(3);
				for (const limit of [1, 3, 1000]) expect(await pages(db(), limit)).toEqual(whole);
			}
			// The last blocks' changes are in them: the receiver of 10^40 kept 1 of it, the deployer has the rest at the top.
			const first = (await tokenHolders(db(), token, { limit: 1000 })).holders;
			expect(first.find((h) => h.address === receiver)?.raw).toBeLessThan(10n ** 30n);
			expect(first[0]?.raw).toBeGreaterThanOrEqual(10n ** 40n - 1n);
			// A block before the tip is summed as before, and the same.
			expect(await allPages(db(), 2, head - 1)).toEqual(await allPages(withoutRanks(db()), 1000, head - 1));
		} finally {
			s.close();
		}
		// A follower taking the folder over keeps them while usable, though they reach past its settled prefix.
		const taken = { ...tip, final_through: head - 64 };
		expect(rankable(taken)?.to).toBeLessThan(head - 60);
		expect(usableRanks(tipDir(), taken)).toEqual((tip as Manifest).ranks?.[0]);
		expect(ranksDue(tipDir(), taken)).toBe(false);
		// Once a reorg replaces the chunk at their block, they are not, and are due (over the settled prefix).
		const reorged = {
			...taken,
			generation: (taken.generation ?? 0) + 1,
			chunks: taken.chunks.map((c) => (c.to === head ? { ...c, last_hash: `0x${"e".repeat(64)}` } : c)),
		};
		expect(usableRanks(tipDir(), reorged)).toBeNull();
		expect(ranksDue(tipDir(), reorged)).toBe(true);
	});

	it("in a folder a follower keeps are written over the settled prefix, and usable", () => {
		const prefix = rankable(m);
		expect(prefix).not.toBeNull();
		expect(m.ranks).toHaveLength(1);
		expect(m.ranks?.[0]).toMatchObject({ from: 0, to: prefix?.to });
		// Settled means 64 blocks below the tip and whole partitions: the tail is not ranked.
		const head = Math.max(...m.chunks.map((c) => c.to));
		expect(m.ranks?.[0]?.to).toBeLessThan(head - 60);
		expect(usableRanks(dir(), m)).toEqual(m.ranks?.[0]);
		expect(ranksDue(dir(), m)).toBe(false);
		expect(m.ranks?.[0]?.walletRecordParts).toBeGreaterThanOrEqual(1);
	});

	it("rank each token's holdings by balance, largest first, then by address, zero balances left out", async () => {
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		try {
			const [file] = rankFiles(dir(), m, "erc20_ranks");
			const rows = (
				await conn.runAndReadAll(
					`SELECT token, address, rank, ${PARTS.map((p) => `CAST(${p} AS VARCHAR) AS ${p}`).join(", ")}, ${LIMBS.join(", ")} FROM read_parquet('${file}') ORDER BY token, rank`,
				)
			).getRowObjectsJS();
			expect(rows.length).toBe(m.ranks?.[0]?.rows);
			const ours = rows.filter((r) => r.token === token);
			expect(ours.length).toBeGreaterThan(8);
			const value = (r: Record<string, unknown>) => amountOfParts(PARTS.map((p) => r[p] as string));
			ours.forEach((r, i) => {
				expect(r.rank).toBe(BigInt(i + 1));
				expect(value(r)).not.toBe(0n);
				const prev = ours[i - 1];
				if (prev)
					expect(value(prev) > value(r) || (value(prev) === value(r) && String(prev.address) < String(r.address))).toBe(
						true,
					);
			});
		} finally {
			conn.closeSync();
			db.closeSync();
		}
	});

	it("give the same holders pages as summing every index file, at the head and around the ranks' block", async () => {
		const s = (m.ranks?.[0]?.to ?? 0) as number;
		const head = Math.max(...m.chunks.map((c) => c.to));
		// A snapshot for each listing, as each request has its own: one snapshot's queries share a
		// request's time budget, which these dozens of pages overran on a loaded machine.
		const db = () => store.snapshot(`eip155-${CHAIN}`);
		expect(db().ranks()).not.toBeNull();
		expect(await db().ranked(token)).toBe(true);
		for (const at of [undefined, head - 1, s + 3, s, s - 5]) {
			const whole = await allPages(withoutRanks(db()), 1000, at);
			expect(whole.length).toBeGreaterThan(5);
			for (const limit of [1, 3, 1000]) expect(await allPages(db(), limit, at)).toEqual(whole);
		}
		// The tail moved holdings the ranks hold: 1 more for its receiver (10^40 in, all but 1 out), and a new order.
		const [atHead, atRanks] = [await allPages(db(), 1000), await allPages(db(), 1000, s)];
		const of = (list: Holder[]) => list.find((h) => h.address === receiver)?.raw ?? 0n;
		expect(of(atHead) - of(atRanks)).toBe(1n);
		expect(atHead.map((h) => h.address)).not.toEqual(atRanks.map((h) => h.address));
	});

	it("give every wallet the same balances as summing every index file, whole and page by page", async () => {
		const s = (m.ranks?.[0]?.to ?? 0) as number;
		const db = store.snapshot(`eip155-${CHAIN}`);
		const holders = (await allPages(withoutRanks(db), 1000)).map((h) => h.address);
		expect(holders).toContain(receiver);
		// The emptied wallet had both tokens at the ranks' block, and only the first at the head.
		expect((await tokenBalances(db, emptied, s)).map((b) => b.token).sort()).toEqual([token, token2].sort());
		expect((await tokenBalances(db, emptied)).map((b) => b.token)).toEqual([token]);
		for (const address of holders)
			for (const at of [undefined, s + 3, s, s - 5]) {
				const whole = await tokenBalances(withoutRanks(db), address, at);
				expect(await tokenBalances(db, address, at)).toEqual(whole);
				const paged: typeof whole = [];
				let after: string | undefined;
				for (let i = 0; i < 50; i++) {
					const p = await tokenBalancesPage(db, address, at, { limit: 1, after });
					paged.push(...p.balances);
					after = p.next;
					if (!after) break;
				}
				expect(paged).toEqual(whole);
			}
	});

	it("are not used once an index file spans their block, and answers stay the same", async () => {
		const r = m.ranks?.[0];
		if (!r) throw new Error("no ranks");
		// The same manifest with the ranks' block moved inside a merged run: as if a later merge
		// wrote a run across it.
		const run = indexFiles(dir(), m, "erc20_holders").find((f) => f.to > f.from + 1 && f.to <= r.to);
		expect(run).toBeDefined();
		const inside = { ...m, generation: (m.generation ?? 0) + 100, ranks: [{ ...r, to: (run?.from ?? 0) + 1 }] };
		expect(usableRanks(dir(), inside)).toBeNull();
		expect(ranksDue(dir(), inside)).toBe(true);
		// Written before key-range parts (one file): due, to be rewritten in parts.
		expect(ranksDue(dir(), m)).toBe(false);
		expect(ranksDue(dir(), { ...m, ranks: [{ ...r, rankParts: undefined }] })).toBe(true);
	});

	it("are read only for tokens whose holdings fill row groups of their own, counted from the file's statistics", async () => {
		const chain = `eip155-${CHAIN}`;
		// This chain's ranks are one row group holding both tokens: by default neither is read
		// through them, and the pages are the summed ones.
		const plain = await createStore(dir());
		try {
			const db = plain.snapshot(chain);
			expect(db.ranks()).not.toBeNull();
			expect(await db.ranked(token)).toBe(false);
			expect(await db.ranked(token2)).toBe(false);
			expect(await allPages(db, 3)).toEqual(await allPages(withoutRanks(db), 1000));
		} finally {
			plain.close();
		}
		// A ranks file where one token has 5,000 holdings and another 10, in row groups of 2,048
		// rows (one thread, so the groups are cut in order): the first fills two groups alone.
		const [file] = rankFiles(dir(), m, "erc20_ranks");
		if (!file) throw new Error("no ranks file");
		const [big, small] = [`0x${"a".repeat(40)}`, `0x${"b".repeat(40)}`];
		const duck = await DuckDBInstance.create(":memory:", { threads: "1" });
		const conn = await duck.connect();
		try {
			await conn.run(`COPY (SELECT * FROM read_parquet('${file}')) TO '${file}.saved' (FORMAT parquet)`);
			await conn.run(
				`COPY (SELECT * EXCLUDE (i) REPLACE (CASE WHEN i < 5000 THEN '${big}' ELSE '${small}' END AS token, i + 1 AS rank)
				 FROM (SELECT * FROM read_parquet('${file}') LIMIT 1), range(5010) t(i) ORDER BY token, rank)
				 TO '${file}.tmp' (FORMAT parquet, ROW_GROUP_SIZE 2048)`,
			);
		} finally {
			conn.closeSync();
			duck.closeSync();
		}
		await rename(`${file}.tmp`, file);
		try {
			for (const [min, expected] of [
				[2048, true],
				[5001, false], // more than it has
				[undefined, false], // the default: 8,192 holdings
			] as const) {
				const s = await createStore(dir(), { ranksMinHoldings: min });
				try {
					const db = s.snapshot(chain);
					expect(await db.ranked(big)).toBe(expected);
					expect(await db.ranked(small)).toBe(false);
				} finally {
					s.close();
				}
			}
		} finally {
			await rename(`${file}.saved`, file);
		}
	});
	it("written before wallet records: read without them and due; rebuilt as records in key-range parts, with the same answers", async () => {
		const chain = `eip155-${CHAIN}`;
		const old = join(root, "before-records");
		await cp(dir(), old, { recursive: true });
		const before = readManifestSafe(old, chain) as Manifest;
		const entry = before.ranks?.[0];
		if (!entry) throw new Error("no ranks");
		// The entry as written before wallet records, whose wallet file (rows by holder) is gone here:
		// nothing may read it.
		delete entry.walletRecordParts;
		await saveManifest(old, before);
		expect(ranksDue(old, before)).toBe(true);
		const s = entry.to;
		const summed = withoutRanks(store.snapshot(chain));
		const holders = (await allPages(summed, 1000)).map((h) => h.address);
		expect(holders.length).toBeGreaterThan(5);
		const stale = await createStore(old, { ranksMinHoldings: 0 });
		try {
			for (const address of holders)
				expect(await tokenBalances(stale.snapshot(chain), address)).toEqual(await tokenBalances(summed, address));
		} finally {
			stale.close();
		}
		// Rebuilt with a few wallets a part, so that a wallet's record is in one of several files.
		process.env.CHAINLAKE_PART_ROWS = "3";
		const writer = await createParquetWriter();
		try {
			expect(await ranksStep(writer, old, before)).not.toBeNull();
		} finally {
			writer.close();
			delete process.env.CHAINLAKE_PART_ROWS;
		}
		const rebuilt = readManifestSafe(old, chain) as Manifest;
		expect(rebuilt.ranks?.[0]?.walletRecordParts).toBeGreaterThan(1);
		expect(rebuilt.ranks?.[0]?.rankParts).toBeGreaterThan(1);
		expect(ranksDue(old, rebuilt)).toBe(false);
		const parts = rankFiles(old, rebuilt, "erc20_wallet_records");
		expect(parts).toHaveLength(rebuilt.ranks?.[0]?.walletRecordParts as number);
		for (const f of parts) expect(existsSync(f), f).toBe(true);
		const fresh = await createStore(old, { ranksMinHoldings: 0 });
		try {
			const db = fresh.snapshot(chain);
			expect(db.ranks()?.walletRecordParts).toBeGreaterThan(1);
			// A token's ranked rows from the one part it is in, under the tail's changes.
			for (const at of [undefined, s + 3]) expect(await allPages(db, 2, at)).toEqual(await allPages(summed, 1000, at));
			for (const address of holders)
				for (const at of [undefined, s + 3, s]) {
					const whole = await tokenBalances(withoutRanks(store.snapshot(chain)), address, at);
					expect(await tokenBalances(db, address, at)).toEqual(whole);
					const paged: typeof whole = [];
					let after: string | undefined;
					for (let i = 0; i < 50 && (i === 0 || after); i++) {
						const p = await tokenBalancesPage(db, address, at, { limit: 1, after });
						paged.push(...p.balances);
						after = p.next;
					}
					expect(paged).toEqual(whole);
				}
		} finally {
			fresh.close();
		}
	});
});

describe("head ranks", () => {
	const chain = `eip155-${CHAIN}`;
	const headDir = () => join(root, "head");
	/** Whether there are `files` and all exist. */
	const allExist = (files: string[]) => files.length > 0 && files.every((f) => existsSync(f));
	/** The ranked holders of `of` in the head ranks file, as pages give them. */
	async function rankedRows(files: string[], of: string): Promise<Holder[]> {
		const duck = await DuckDBInstance.create(":memory:");
		const conn = await duck.connect();
		try {
			const list = files.map((f) => `'${f}'`).join(", ");
			const rows = (
				await conn.runAndReadAll(
					`SELECT address, last_block, ${PARTS.map((p) => `${p}::VARCHAR`).join(", ")} FROM read_parquet([${list}]) WHERE token = '${of}' ORDER BY rank`,
				)
			).getRows();
			return rows
				.map((r) => ({
					address: String(r[0]),
					raw: amountOfParts(r.slice(2).map(String)),
					seenAt: Number(r[1]),
				}))
				.filter((h) => h.raw > 0n && h.address !== "0x0000000000000000000000000000000000000000");
		} finally {
			conn.closeSync();
			duck.closeSync();
		}
	}

	it("rank a followed folder's busy tokens near its head: their pages there and after are summing's; rebuilt as the chain moves", async () => {
		await cp(dir(), headDir(), { recursive: true });
		const hm = readManifestSafe(headDir(), chain) as Manifest;
		const s = usableRanks(headDir(), hm)?.to as number;
		const head = Math.max(...hm.chunks.map((c) => c.to));
		expect(hm.chunks.some((c) => c.to === tailMid)).toBe(true);
		expect(s).toBeLessThan(tailMid);
		expect(headRanksDue(headDir(), hm, { through: tailMid })).toBe(true);
		const writer = await createParquetWriter();
		try {
			// Tokens with a holding changed after the ranks' block, up to the tail's second block: the
			// first token alone (the second's holdings change in the last block).
			expect(await headRanksStep(writer, headDir(), hm, undefined, { minChanges: 1, through: tailMid })).toEqual([]);
		} finally {
			writer.close();
		}
		const saved = readManifestSafe(headDir(), chain) as Manifest;
		const entry = saved.ranks?.[1];
		expect(saved.ranks?.[0]).toEqual(m.ranks?.[0]);
		expect(entry).toMatchObject({ from: 0, to: tailMid });
		// With the token's holdings there: every holder it had at their block (ranked, zero balances left out).
		expect(entry?.tokens).toEqual({
			[token]: (await allPages(withoutRanks(store.snapshot(chain)), 1000, tailMid)).length + 1,
		});
		expect(usableHeadRanks(headDir(), saved)).toEqual(entry);
		const files = rankFiles(headDir(), saved, "erc20_head_ranks");
		expect(files).toHaveLength(entry?.rankParts as number);
		expect(allExist(files)).toBe(true);
		// Not due again until the indexed chain is HEAD_RANKS_EVERY blocks past them.
		expect(headRanksDue(headDir(), saved)).toBe(false);
		expect(headRanksDue(headDir(), saved, { every: 1 })).toBe(true);

		const heads = await createStore(headDir());
		try {
			const db = () => heads.snapshot(chain);
			expect(db().headRanks()).toEqual(entry);
			// Their rows are the token's holders at their block, in the page's order.
			const atBlock = await allPages(withoutRanks(db()), 1000, tailMid);
			expect(await rankedRows(files, token)).toEqual(atBlock);
			// Each first page as summing's (its unchanged holdings are read by rank, up to a bound).
			for (let limit = 1; limit <= 8; limit++)
				expect(await tokenHolders(db(), token, { limit }), `first ${limit}`).toEqual(
					await tokenHolders(withoutRanks(db()), token, { limit }),
				);
			// Read for the token they rank, at their block and after it; not for the other token, nor before.
			for (const [of, at, read] of [
				[token, undefined, true],
				[token, tailMid, true],
				[token, tailMid - 1, false],
				[token2, undefined, false],
			] as const) {
				const statements: string[] = [];
				const snap = db();
				const spy: Snapshot = {
					...snap,
					query: (sql, ...rest) => {
						statements.push(sql);
						return snap.query(sql, ...rest);
					},
				};
				await tokenHolders(spy, of, { limit: 2 }, at);
				expect(
					statements.some((q) => q.includes("{erc20_head_ranks}")),
					`${of} at ${at}`,
				).toBe(read);
			}
			for (const of of [token, token2])
				for (const at of [undefined, tailMid + 1, tailMid, tailMid - 1, s + 3]) {
					const whole = await allPages(withoutRanks(db()), 1000, at, of);
					expect(whole.length).toBeGreaterThan(2);
					for (const limit of [1, 3, 1000]) {
						expect(await allPages(db(), limit, at, of), `${of} at ${at}`).toEqual(whole);
						// Past the changes a page adds to them: the holder ranks or summing instead.
						expect(await allPages(db(), limit, at, of, 0), `${of} at ${at}, in SQL`).toEqual(whole);
					}
				}
		} finally {
			heads.close();
		}

		// The newest chunk without its holders file yet (as for a moment after a follower appends it):
		// its changes are summed from its transfers, per page.
		const lackDir = join(root, "head-lacking");
		await cp(headDir(), lackDir, { recursive: true });
		const lacking = readManifestSafe(lackDir, chain) as Manifest;
		const newest = lacking.chunks.find((c) => c.to === head);
		if (!newest?.indexes) throw new Error("no newest chunk");
		newest.indexes = newest.indexes.filter((i) => i !== "erc20_holders");
		delete newest.parts?.erc20_holders;
		await saveManifest(lackDir, lacking);
		const lacks = await createStore(lackDir);
		try {
			const db = () => lacks.snapshot(chain);
			expect(db().headRanks()?.to).toBe(tailMid);
			for (const of of [token, token2])
				for (const limit of [1, 3, 1000])
					expect(await allPages(db(), limit, undefined, of)).toEqual(
						await allPages(withoutRanks(db()), 1000, undefined, of),
					);
		} finally {
			lacks.close();
		}

		// A later build (the chain moved on) replaces them: now at the head, both tokens changed.
		const writer2 = await createParquetWriter();
		let gone: string[] | null;
		try {
			gone = await headRanksStep(writer2, headDir(), saved, undefined, { minChanges: 1, every: 1 });
		} finally {
			writer2.close();
		}
		expect(gone).toEqual(files);
		const later = readManifestSafe(headDir(), chain) as Manifest;
		expect(later.ranks).toHaveLength(2);
		expect(later.ranks?.[1]?.to).toBe(head);
		expect(Object.keys(later.ranks?.[1]?.tokens ?? {}).sort()).toEqual([token, token2].sort());
		const moved = await createStore(headDir());
		try {
			const db = () => moved.snapshot(chain);
			expect(db().headRanks()?.to).toBe(head);
			for (const of of [token, token2])
				for (const at of [undefined, tailMid]) {
					const whole = await allPages(withoutRanks(db()), 1000, at, of);
					for (const limit of [1, 1000]) expect(await allPages(db(), limit, at, of)).toEqual(whole);
				}
		} finally {
			moved.close();
		}

		// The holder ranks rebuilt below them keep them; none of the tokens busy: an entry of no files.
		const rebuilt = { ...later, ranks: later.ranks?.slice(1) };
		const writer3 = await createParquetWriter();
		try {
			await ranksStep(writer3, headDir(), rebuilt);
			expect(rebuilt.ranks?.[1]).toEqual(later.ranks?.[1]);
			expect(usableHeadRanks(headDir(), rebuilt)).toEqual(later.ranks?.[1]);
			const quiet = { ...rebuilt, ranks: rebuilt.ranks?.slice(0, 1) };
			await headRanksStep(writer3, headDir(), quiet, undefined, { minChanges: 10_000, through: tailMid });
			expect(quiet.ranks?.[1]).toMatchObject({ to: tailMid, tokens: {}, rankParts: 0, rows: 0 });
			expect(rankFiles(headDir(), quiet, "erc20_head_ranks")).toEqual([]);
		} finally {
			writer3.close();
		}
	});

	it("are not used once a reorg or a compaction ends their block, or an index file spans it", () => {
		const saved = readManifestSafe(headDir(), chain) as Manifest;
		const h = usableHeadRanks(headDir(), saved);
		if (!h) throw new Error("no head ranks");
		const at = (change: Partial<typeof h>) => ({
			...saved,
			generation: (saved.generation ?? 0) + 100,
			ranks: [saved.ranks?.[0] as NonNullable<Manifest["ranks"]>[number], { ...h, ...change }],
		});
		// Their block replaced by a reorg (another hash), or no more a chunk's end.
		expect(usableHeadRanks(headDir(), at({ last_hash: `0x${"0".repeat(64)}` }))).toBeNull();
		expect(usableHeadRanks(headDir(), at({ to: h.to - 1 }))).toBeNull();
		// A merged run listed across their block (as a merge of the chunks around it would write).
		const spanned = {
			...at({}),
			runs: [
				...(saved.runs ?? []),
				{
					index: "erc20_holders" as const,
					from: h.to - 3,
					to: h.to + 2,
					last_hash: "0x",
					gen: 1,
					chunks: 2,
					rows: 1,
					keys: 1,
				},
			],
		};
		expect(usableHeadRanks(headDir(), at({}))).toEqual(h);
		expect(usableHeadRanks(headDir(), spanned)).toBeNull();
		// Then due again: the holder ranks they are built on are still usable.
		expect(usableRanks(headDir(), spanned)).not.toBeNull();
		expect(headRanksDue(headDir(), spanned)).toBe(true);
	});
});
