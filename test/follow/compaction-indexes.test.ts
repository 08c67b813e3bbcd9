import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATASETS } from "../../src/extract/rows.js";
import type { FollowEvent } from "../../src/follow/follow-context.js";
import { createFollower } from "../../src/follow/follower.js";
import { createStore } from "../../src/query/store/create-store.js";
import { findTransfers } from "../../src/query/transfers.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { writtenWith } from "../../src/store/format/indexes.js";
import { partPaths } from "../../src/store/format/key-parts.js";
import { partitionPath } from "../../src/store/format/layout.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import type { ChunkEntry } from "../../src/store/format/records.js";
import { removeUnlisted } from "../../src/store/retire/remove-unlisted.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { INDEX_SIDES, indexDiff } from "../helpers/index-rows.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * The follower's compaction (one-block head files merged into their partition's file once final)
 * keeps the index files: the merged chunk lists both indexes, and its index files hold exactly
 * the rows derived from its merged dataset files, which are the rows of the one-block chunks'
 * index files it replaces. Parts of 4 rows (CHAINLAKE_PART_ROWS): a wallet with more than 2 rows
 * in a file gets a key-range part of its own (store/format/key-parts.ts), so the follower's
 * derive, compaction and the reads over them run with cuts.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
let anvil: AnvilInstance;
let root: string;
let follower: ReturnType<typeof createFollower>;
let accounts: string[];
let db: DuckDBInstance;

const rpc = (method: string, params: unknown[]) => nodeCall(anvil.url, method, params);
/** One transaction, mined in a block of its own before the next is sent: anvil answers
 * eth_sendTransaction before its automine has sealed the block, so on a busy machine two sends in
 * a row could share one block (CI saw head 5 where 6 were sent). */
const send = (from: string, to: string, wei: number) =>
	sendMined(anvil.url, { from, to, value: `0x${wei.toString(16)}` });
/** Waits until the node reports block `n` as its head (eth_blockNumber can lag a just-mined block). */
async function headAt(n: number) {
	for (let i = 0; i < 100 && Number(await rpc("eth_blockNumber", [])) < n; i++)
		await new Promise((r) => setTimeout(r, 20));
	expect(Number(await rpc("eth_blockNumber", []))).toBe(n);
}

beforeAll(async () => {
	process.env.CHAINLAKE_PART_ROWS = "4";
	anvil = await startAnvil({ chainId: CHAIN });
	accounts = (await rpc("eth_accounts", [])) as string[];
	root = await mkdtemp(join(tmpdir(), "chainlake-compact-idx-"));
	const logger = createMemoryLogger();
	follower = createFollower({
		rpc: createRpcClient({ urls: [anvil.url], logger }),
		chain: parseChainId(CHAIN_ID),
		dataDir: root,
		logger,
		traces: "parity",
		finalityDepth: 2,
		partitionSize: 4,
	});
	db = await DuckDBInstance.create(":memory:");
});

afterAll(async () => {
	delete process.env.CHAINLAKE_PART_ROWS;
	await follower?.stop();
	db?.closeSync();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

const [a0, a1, a2] = [0, 1, 2];

describe("compaction on the follower", () => {
	it("gives the merged chunk index files equal to the rows derived from its datasets", async () => {
		// Blocks 1..6, one transaction each; a self-transfer in block 5 (one index row, not two).
		for (let i = 1; i <= 6; i++) {
			const from = accounts[i % 2 === 0 ? a0 : a1] as string;
			await send(from, i === 5 ? from : (accounts[a2] as string), i);
		}
		await headAt(6);
		await follower.step();
		// Head 6, final up to 4: [0..3] and [4..4] as chunks, then one-block chunks 5 and 6.
		let m = await loadManifest(root, CHAIN_ID, CHAIN);
		expect(m.chunks.map((c) => [c.from, c.to])).toEqual([
			[0, 3],
			[4, 4],
			[5, 5],
			[6, 6],
		]);
		// Those written with a chunk; the balance ones come later, in the background (merges.ts).
		const written = writtenWith(DATASETS);
		for (const c of m.chunks) expect(c.indexes ?? [], `${c.from}`).toEqual(expect.arrayContaining(written));

		// Blocks 7..10: 4..7 becomes final and whole, and is compacted into one chunk.
		for (let i = 7; i <= 10; i++) await send(accounts[a2] as string, accounts[a0] as string, i);
		await headAt(10);
		const events: FollowEvent[] = await follower.step();
		expect(events).toContainEqual({ type: "compact", from: 4, to: 7, files: 4 });
		m = await loadManifest(root, CHAIN_ID, CHAIN);
		const merged = m.chunks.find((c) => c.from === 4) as ChunkEntry;
		expect([merged.from, merged.to]).toEqual([4, 7]);
		expect(merged.indexes ?? []).toEqual(expect.arrayContaining(written));
		// a2 has 3 transfers in blocks 4..7: a part of its own in the merged chunk's wallet_transfers.
		const busy = (accounts[a2] as string).toLowerCase();
		expect(merged.cuts?.wallet_transfers).toEqual(expect.arrayContaining([busy, `${busy}0`]));

		for (const [index, [source]] of Object.entries(INDEX_SIDES) as [
			keyof typeof INDEX_SIDES,
			readonly ["transfers" | "transactions", string, string],
		][]) {
			const file = partPaths(partitionPath(root, CHAIN_ID, index, merged), merged.parts?.[index]);
			for (const part of file) expect(existsSync(part), part).toBe(true);
			// Equal to the rows derived from the merged dataset file...
			const derived = await indexDiff(db, index, file, [partitionPath(root, CHAIN_ID, source, merged)]);
			expect(derived, index).toEqual({
				extra: 0,
				missing: 0,
				rows: derived.expected,
				expected: derived.rows,
				sorted: true,
			});
			// ...and from the one-block files it replaced (still on disk during the grace period).
			const replaced = await oneBlockFiles(source, [4, 5, 6, 7]);
			const fromParts = await indexDiff(db, index, file, replaced);
			expect(fromParts, index).toEqual(derived);
			// One transaction (and one native transfer) a block; the self-transfer in block 5 once.
			expect(derived.rows, index).toBe(2 * 4 - 1);
		}

		// Through the query layer: the wallet list (read through the merged index) has every transfer once.
		const store = await createStore(root);
		try {
			const page = { start: 0, end: 10, limit: 100, order: "asc" as const };
			const list = await findTransfers(store.snapshot(CHAIN_ID), { address: accounts[a2] as string }, page);
			expect(list.rows.map((r) => Number(r.value))).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10]);
			const self = await findTransfers(store.snapshot(CHAIN_ID), { address: accounts[a1] as string }, page);
			expect(self.rows.map((r) => Number(r.value))).toEqual([1, 3, 5]);
		} finally {
			store.close();
		}

		const ofSides = (f: string) => Object.keys(INDEX_SIDES).some((i) => f.includes(`${i}/`)) && f.endsWith(".parquet");
		// The replaced one-block index files are unlisted now; the Delta logs removed them, so the
		// next start's clean-up keeps them for the retention (outside readers may be on them)...
		await follower.stop();
		const leftovers = await Promise.all(Object.keys(INDEX_SIDES).map((i) => oneBlockFiles(i, [4, 5, 6, 7])));
		expect(leftovers.flat().length).toBe(8);
		const saved = await loadManifest(root, CHAIN_ID, CHAIN);
		expect((await removeUnlisted(root, saved)).filter((f) => ofSides(f))).toEqual([]);
		for (const f of leftovers.flat()) expect(existsSync(f), f).toBe(true);
		// ...and without the export, the follower's note of them (`_retired.json`) keeps them until
		// due, for readers in other processes...
		saved.lake = { delta: false };
		expect((await removeUnlisted(root, saved)).filter((f) => ofSides(f))).toEqual([]);
		for (const f of leftovers.flat()) expect(existsSync(f), f).toBe(true);
		// ...and once due, nothing keeps them: it deletes them.
		const journal = join(root, CHAIN_ID, "_retired.json");
		const due = (JSON.parse(readFileSync(journal, "utf8")) as { due: number; files: string[] }[]).map((e) => ({
			...e,
			due: Date.now() - 1,
		}));
		writeFileSync(journal, JSON.stringify(due));
		const removed = await removeUnlisted(root, saved);
		expect(removed.filter((f) => ofSides(f)).sort()).toEqual(
			leftovers
				.flat()
				.map((f) => f.slice(join(root, CHAIN_ID).length + 1))
				.sort(),
		);
		for (const f of leftovers.flat()) expect(existsSync(f), f).toBe(false);
		for (const i of Object.keys(INDEX_SIDES)) expect(existsSync(partitionPath(root, CHAIN_ID, i, merged))).toBe(true);
	});
});

/** The one-block files of `dataset` for these blocks (replaced by compaction, deleted only after a grace period). */
async function oneBlockFiles(dataset: string, blocks: number[]): Promise<string[]> {
	const names = await readdir(join(root, CHAIN_ID, dataset));
	return blocks.map((n) => {
		const pad = String(n).padStart(12, "0");
		const found = names.filter((f) => f.startsWith(`${dataset}_${pad}_${pad}_`) && f.endsWith(".parquet"));
		expect(found, `${dataset} block ${n}`).toHaveLength(1);
		return join(root, CHAIN_ID, dataset, found[0] as string);
	});
}
