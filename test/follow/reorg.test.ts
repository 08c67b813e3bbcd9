import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createFollower } from "../../src/follow/follower.js";
import { createStore } from "../../src/query/store/create-store.js";
import { findTransfers } from "../../src/query/transfers.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { datasetRows } from "../helpers/compare.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * Reorgs on a real anvil node (`anvil_reorg`) at depths 1, 3 and 12, each with a transfer that
 * exists only on the orphaned branch: afterwards the followed folder equals a fresh backfill of
 * the canonical chain, dataset by dataset, and the orphaned block hashes answer ghost: true.
 */
const CHAIN = 31337;
let anvil: AnvilInstance;
let root: string;
let dataDir: string;
let follower: ReturnType<typeof createFollower>;
let accounts: string[];

const rpc = (method: string, params: unknown[]) => nodeCall(anvil.url, method, params);

const send = (from: string, to: string, wei: bigint) =>
	sendMined(anvil.url, { from, to, value: `0x${wei.toString(16)}` });
const blockHash = async (n: number) =>
	((await rpc("eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as { hash: string }).hash;
const head = async () => Number(await rpc("eth_blockNumber", []));

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	accounts = (await rpc("eth_accounts", [])) as string[];
	root = await mkdtemp(join(tmpdir(), "chainlake-reorg-"));
	dataDir = join(root, "followed");
	const logger = createMemoryLogger();
	follower = createFollower({
		rpc: createRpcClient({ urls: [anvil.url], logger }),
		chain: parseChainId(`eip155-${CHAIN}`),
		dataDir,
		logger,
		traces: "parity",
		finalityDepth: 15,
		partitionSize: 8,
	});
	for (let i = 0; i < 20; i++) await send(accounts[0] as string, accounts[1] as string, BigInt(i + 1));
	await follower.step();
});

afterAll(async () => {
	await follower?.stop();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

describe.each([1, 3, 12])("a reorg %i blocks deep", (depth) => {
	it("leaves every dataset equal to a fresh backfill of the canonical chain, orphans as ghosts", async () => {
		// The orphaned branch: a transfer to an address that appears nowhere else.
		const only = `0x${depth.toString(16).padStart(40, "e")}`;
		await send(accounts[2] as string, only, 12345n);
		for (let i = 1; i < depth; i++) await rpc("evm_mine", []);
		const events = await follower.step();
		expect(events.some((e) => e.type === "blocks")).toBe(true);
		const top = await head();
		const orphaned = await Promise.all(Array.from({ length: depth }, (_, i) => blockHash(top - i)));

		// A store open across the reorg, that has put the orphaned block's hash on a wallet row (its
		// stamps kept: query/store/block-stamps.ts).
		const early = await createStore(dataDir);
		const page = { start: 0, end: top, limit: 100, order: "desc" as const };
		const before = await findTransfers(early.snapshot(`eip155-${CHAIN}`), { address: only }, page);
		expect(before.rows[0]).toMatchObject({ block_hash: orphaned[depth - 1] });

		// The new branch re-includes a transfer in the first block replaced.
		const again = `0x${depth.toString(16).padStart(40, "d")}`;
		await rpc("anvil_reorg", [depth, [[{ from: accounts[3], to: again, value: "0x7" }, 0]]]);
		expect(await blockHash(top)).not.toBe(orphaned[0]);
		const after = await follower.step();
		const reorg = after.find((e) => e.type === "reorg");
		expect(reorg, JSON.stringify(after)).toMatchObject({ type: "reorg", ancestor: top - depth });

		const fresh = join(root, `fresh-${depth}`);
		// The reference folder without Delta Lake logs: only its rows are read (the follower keeps its own).
		await backfillInto(fresh, anvil.url, CHAIN, { traces: "parity", partitionSize: 8, lake: { delta: false } });
		const [followed, canonical] = await Promise.all([datasetRows(dataDir, CHAIN), datasetRows(fresh, CHAIN)]);
		for (const d of Object.keys(canonical)) expect(followed[d], d).toEqual(canonical[d]);
		expect(JSON.stringify(followed.transfers)).not.toContain(only.slice(2));
		// The store open across the reorg answers with the new branch's block, not the stamps it kept.
		try {
			const moved = await findTransfers(early.snapshot(`eip155-${CHAIN}`), { address: again }, page);
			expect(moved.rows.length).toBe(1);
			const n = Number(moved.rows[0]?.block_number);
			expect(n).toBe(top - depth + 1);
			expect(moved.rows[0]?.block_hash).toBe(await blockHash(n));
			expect(moved.rows[0]?.block_hash).not.toBe(orphaned[depth - 1]);
			expect((await findTransfers(early.snapshot(`eip155-${CHAIN}`), { address: only }, page)).rows).toEqual([]);
		} finally {
			early.close();
		}

		const store = await createStore(dataDir);
		const app = await buildApp({
			store,
			keyring: createKeyring({ path: join(root, "keys.json"), envKeys: ["k"] }),
			dataDir,
		});
		try {
			for (const hash of orphaned) {
				const r = await app.inject({
					url: `/eip155-${CHAIN}/v1/blocks/${hash}`,
					headers: { authorization: "Bearer k" },
				});
				expect(r.statusCode, hash).toBe(200);
				expect(r.json()).toMatchObject({ hash, ghost: true });
			}
			const latest = await app.inject({
				url: `/eip155-${CHAIN}/v1/blocks/latest`,
				headers: { authorization: "Bearer k" },
			});
			expect(latest.json()).toMatchObject({ number: top, ghost: false, hash: await blockHash(top) });
			const gone = await app.inject({
				url: `/eip155-${CHAIN}/v1/address/${only}/transfers?asset_type=native`,
				headers: { authorization: "Bearer k" },
			});
			expect(gone.json().items).toEqual([]);
		} finally {
			await app.close();
			store.close();
		}
	});
});

describe("a reorg deeper than the finality depth", () => {
	it("is refused as a node fault, not applied", async () => {
		const before = await datasetRows(dataDir, CHAIN);
		// Deeper than finality (15): the stored chain below the last final block changes.
		await rpc("anvil_reorg", [18, []]);
		const events = await follower.step();
		expect(events[0]).toMatchObject({ type: "fault" });
		expect(follower.stats.faults).toBeGreaterThan(0);
		expect(await datasetRows(dataDir, CHAIN)).toEqual(before);
	});
});
