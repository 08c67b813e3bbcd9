import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFollower } from "../../src/follow/follower.js";
import { nativeBalance, tokenBalances } from "../../src/query/balances.js";
import { nftHoldings } from "../../src/query/nfts.js";
import { createStore } from "../../src/query/store/create-store.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { openViews } from "../helpers/anvil-chain.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * Balances stay exact through reorgs 1 and 3 blocks deep on a real anvil node: on the orphaned
 * branch an ERC-20 transfer, an ERC-721 transfer and an ERC-1155 transfer to an address that
 * appears nowhere else; after the reorg, and again once the reorged blocks have settled and the
 * follower has merged them into the balance indexes, every account's ETH balance equals
 * `eth_getBalance`, its ERC-20 balance
 * `balanceOf`, every ERC-721 owner `ownerOf` and every ERC-1155 (holder, id) `balanceOf`, at
 * the head and at a past block; and so with the reorged blocks' balance delta files derived in
 * the background (src/store/merges.ts headStep) and taken out by the reorg.
 */
const CHAIN = 31337;
const ABI = parseAbi([
	"function balanceOf(address) view returns (uint256)",
	"function transfer(address, uint256) returns (bool)",
	"function ownerOf(uint256) view returns (address)",
	"function transferFrom(address, address, uint256)",
	"function mint(address, uint256)",
	"function safeTransferFrom(address, address, uint256, uint256, bytes)",
]);
const ABI1155 = parseAbi(["function balanceOf(uint256, address) view returns (uint256)"]);
let anvil: AnvilInstance;
let root: string;
let dataDir: string;
let follower: ReturnType<typeof createFollower>;
let accounts: string[];
let t20: string;
let t721: string;
let t1155: string;

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const head = async () => Number(await rpc("eth_blockNumber"));
const call = async (to: string, data: `0x${string}`, block: number) =>
	((await rpc("eth_call", [{ to, data }, `0x${block.toString(16)}`])) as string).replace(/^0x$/, "0x0");

/** Every account's balances in the lake equal the node's at block `n`. */
async function expectExact(n: number, extra: string[]) {
	const store = await createStore(dataDir);
	const views = await openViews(dataDir, CHAIN);
	try {
		const db = store.snapshot(`eip155-${CHAIN}`);
		const holders = [...accounts, ...extra];
		for (const h of holders) {
			const native = await nativeBalance(db, h, n);
			expect(native.raw, `ETH of ${h} at ${n}`).toBe(
				BigInt((await rpc("eth_getBalance", [h, `0x${n.toString(16)}`])) as string),
			);
			const ours = (await tokenBalances(db, h, n)).find((b) => b.token === t20)?.raw ?? 0n;
			const node = BigInt(
				await call(t20, encodeFunctionData({ abi: ABI, functionName: "balanceOf", args: [h as `0x${string}`] }), n),
			);
			expect(ours, `ERC-20 of ${h} at ${n}`).toBe(node);
		}
		const ids = (
			await views.rows("SELECT DISTINCT token_id FROM transfers WHERE contract = $c AND block_number <= $n", {
				c: t721,
				n,
			})
		).map((r) => String(r.token_id));
		const owners = await nftHoldings(db, { by: "token", value: t721, n, limit: 1000 });
		const got = new Map(owners.items.map((o) => [o.tokenId, o.holder]));
		expect(ids.length).toBeGreaterThan(1);
		for (const id of ids) {
			const out = await call(t721, encodeFunctionData({ abi: ABI, functionName: "ownerOf", args: [BigInt(id)] }), n);
			expect(got.get(id) ?? null, `owner of ${id} at ${n}`).toBe(`0x${out.slice(-40)}`);
		}
		for (const h of holders) {
			const inv = await nftHoldings(db, { by: "address", value: h, n, contract: t1155, limit: 1000 });
			for (const id of [1n, 2n, 3n]) {
				const node = BigInt(
					await call(
						t1155,
						encodeFunctionData({ abi: ABI1155, functionName: "balanceOf", args: [id, h as `0x${string}`] }),
						n,
					),
				);
				expect(inv.items.find((i) => i.tokenId === String(id))?.amount ?? 0n, `1155 id ${id} of ${h} at ${n}`).toBe(
					node,
				);
			}
		}
	} finally {
		views.close();
		store.close();
	}
}

/**
 * The chunks above block `n` that list their balance delta files (one-block chunks here), once
 * the background has derived them for `want` chunks or 20 polls passed. (A step that finds the
 * previous background run just finishing starts none: the next poll does.)
 */
async function deltasAbove(n: number, want: number): Promise<number> {
	let count = 0;
	for (let i = 0; i < 20; i++) {
		await follower.merges();
		const m = await loadManifest(dataDir, `eip155-${CHAIN}`, CHAIN);
		count = m.chunks.filter((c) => c.from > n && c.indexes?.includes("erc20_balances")).length;
		if (count >= want) break;
		await follower.step();
	}
	return count;
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	const workload = await runWorkload({ rpcUrl: anvil.url });
	t20 = workload.contracts.token20.toLowerCase();
	t721 = workload.contracts.token721.toLowerCase();
	t1155 = workload.contracts.token1155.toLowerCase();
	accounts = ((await rpc("eth_accounts")) as string[]).map((a) => a.toLowerCase());
	root = await mkdtemp(join(tmpdir(), "chainlake-reorg-balances-"));
	dataDir = join(root, "followed");
	const logger = createMemoryLogger();
	follower = createFollower({
		rpc: createRpcClient({ urls: [anvil.url], logger }),
		chain: parseChainId(`eip155-${CHAIN}`),
		dataDir,
		logger,
		traces: "parity",
		finalityDepth: 15,
		partitionSize: 4,
		// No Delta Lake logs: nothing here reads them, and they are a good part of a save's CPU.
		lake: { delta: false },
	});
	await follower.step();
	await follower.merges();
}, 120_000);

afterAll(async () => {
	await follower?.stop();
	await anvil?.stop();
	if (!process.env.KEEP) await rm(root, { recursive: true, force: true });
});

/**
 * npm test takes the 3-block reorg; `npm run test:long` (CHAINLAKE_CRASH_FULL=1, which CI runs)
 * the 1-block one before it too: the pair took 48 s of npm test's time (docs/testing.md).
 */
const DEPTHS = process.env.CHAINLAKE_CRASH_FULL === "1" ? [1, 3] : [3];
describe.each(DEPTHS)("a reorg %i blocks deep", (depth) => {
	it("leaves every ERC-20, ERC-721 and ERC-1155 balance equal to the node's, before and after the blocks settle", async () => {
		const only = `0x${depth.toString(16).padStart(40, "b")}`;
		const deployer = accounts[0] as string;
		const id = 900n + BigInt(depth);
		await sendMined(anvil.url, {
			from: deployer,
			to: t721,
			data: encodeFunctionData({ abi: ABI, functionName: "mint", args: [deployer as `0x${string}`, id] }),
		});
		await follower.step();
		// The orphaned branch.
		await sendMined(anvil.url, {
			from: deployer,
			to: t20,
			data: encodeFunctionData({ abi: ABI, functionName: "transfer", args: [only as `0x${string}`, 10n ** 30n] }),
		});
		await sendMined(anvil.url, {
			from: deployer,
			to: t721,
			data: encodeFunctionData({
				abi: ABI,
				functionName: "transferFrom",
				args: [deployer as `0x${string}`, only as `0x${string}`, id],
			}),
		});
		for (let i = 2; i < depth; i++) await rpc("evm_mine");
		const alice = accounts[1] as string;
		if (depth > 1)
			await sendMined(anvil.url, {
				from: alice,
				to: t1155,
				data: encodeFunctionData({
					abi: ABI,
					functionName: "safeTransferFrom",
					args: [alice as `0x${string}`, only as `0x${string}`, 1n, 1n, "0x"],
				}),
			});
		await follower.step();
		const top = await head();
		await expectExact(top, [only]);
		// The orphaned blocks get their balance deltas in the background (merges.ts headStep), so
		// the reorg below must take those files out too.
		expect(await deltasAbove(top - depth, depth)).toBe(depth);
		await expectExact(top, [only]);

		// Replaced by a branch of empty blocks one longer, so the follower sees a new head.
		await rpc("anvil_reorg", [depth, []]);
		await rpc("evm_mine");
		const events = await follower.step();
		expect(
			events.some((e) => e.type === "reorg"),
			JSON.stringify(events),
		).toBe(true);
		await expectExact(await head(), [only]);
		await expectExact(top - depth, [only]);
		// Once the new branch has its deltas too.
		expect(await deltasAbove(top - depth, depth + 1)).toBe(depth + 1);
		await expectExact(await head(), [only]);

		// Settled and merged into the balance indexes: the same answers.
		await rpc("anvil_mine", ["0x50"]);
		await follower.step();
		await follower.merges();
		await expectExact(await head(), [only]);
		await expectExact(top - 1, [only]);
	}, 240_000);
});
