import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tokenBalances } from "../../src/query/balances.js";
import { type HolderCursor, tokenHolders, ZERO_ADDRESS } from "../../src/query/holders.js";
import { createStore, type Store } from "../../src/query/store.js";
import { amountOf, withDecimals } from "../../src/store/amounts.js";
import { manifestPath } from "../../src/store/layout.js";
import type { Manifest } from "../../src/store/manifest.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto, openViews } from "../helpers/anvil-chain.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * ERC-20 balances from the lake (src/query/balances.ts over the erc20_balances index) against the
 * node's own `balanceOf`, by eth_call at the head and at past blocks: the workload's token (whose
 * amounts pass 2^128 and 2^255, so no 128-bit or floating-point sum survives) plus transfers
 * between a few holders over many blocks, backfilled in 2-block partitions (so that the deltas
 * merge into runs and a past block falls inside a run) and in one partition.
 */
const CHAIN = 31337;
const ERC20 = parseAbi([
	"function balanceOf(address) view returns (uint256)",
	"function transfer(address, uint256) returns (bool)",
]);
let anvil: AnvilInstance;
let root: string;
let token: string;
let holders: string[];
const stores: Store[] = [];

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const balanceOf = async (holder: string, block: number) =>
	BigInt(
		(await rpc("eth_call", [
			{
				to: token,
				data: encodeFunctionData({ abi: ERC20, functionName: "balanceOf", args: [holder as `0x${string}`] }),
			},
			`0x${block.toString(16)}`,
		])) as string,
	);

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	const workload = await runWorkload({ rpcUrl: anvil.url });
	token = workload.contracts.token20.toLowerCase();
	const accounts = ((await rpc("eth_accounts")) as string[]).map((a) => a.toLowerCase());
	// The deployer and alice hold the big amounts: pass parts of them around, a block each.
	const [deployer, alice] = [workload.accounts.deployer, workload.accounts.alice].map((a) => a.toLowerCase());
	for (let i = 0; i < 30; i++) {
		const from = i % 3 === 0 ? (alice as string) : (deployer as string);
		const to = accounts[3 + (i % 4)] as string;
		const amount = 10n ** BigInt(20 + (i % 40)) + BigInt(i);
		await sendMined(anvil.url, {
			from,
			to: token,
			data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [to as `0x${string}`, amount] }),
		});
		if (i % 5 === 0) await rpc("anvil_mine", ["0x3"]);
	}
	await rpc("anvil_mine", ["0x46"]);
	root = await mkdtemp(join(tmpdir(), "chainlake-balances-"));
	await backfillInto(join(root, "merged"), anvil.url, CHAIN, { partitionSize: 2, traces: "parity" });
	await backfillInto(join(root, "whole"), anvil.url, CHAIN, { partitionSize: 100_000, traces: "parity" });
	const views = await openViews(join(root, "whole"), CHAIN);
	try {
		holders = (
			await views.rows(
				"SELECT DISTINCT a FROM (SELECT sender AS a FROM transfers WHERE contract = $t UNION SELECT recipient FROM transfers WHERE contract = $t) ORDER BY a",
				{ t: token },
			)
		).map((r) => String(r.a));
	} finally {
		views.close();
	}
}, 300_000);

afterAll(async () => {
	for (const s of stores) s.close();
	await anvil?.stop();
	if (!process.env.KEEP) await rm(root, { recursive: true, force: true });
});

describe("ERC-20 balances from the lake", () => {
	it("limbs put uint256 sums back together exactly, and decimals apply exactly", () => {
		const max = 2n ** 256n - 1n;
		const limbs = max.toString().padStart(90, "0").match(/.{18}/g)?.reverse() as string[];
		expect(amountOf(limbs)).toBe(max);
		expect(amountOf(["-5", "1"])).toBe(10n ** 18n - 5n);
		expect(withDecimals(1_500_000n, 6)).toBe("1.5");
		expect(withDecimals(1n, 6)).toBe("0.000001");
		expect(withDecimals(-42n * 10n ** 18n, 18)).toBe("-42");
	});

	it("every holder's balance equals balanceOf at the head and at past blocks, merged or not", async () => {
		const merged = await manifestOf(join(root, "merged"));
		expect((merged.runs ?? []).filter((r) => r.index === "erc20_balances").length).toBeGreaterThan(0);
		const head = Number(await rpc("eth_blockNumber"));
		const runs = (merged.runs ?? []).filter((r) => r.index === "erc20_balances");
		// Past blocks inside runs (so a run straddles them), and before the token existed.
		const past = [...runs.map((r) => Math.floor((r.from + r.to) / 2)), 1, head - 40];
		expect(holders.length).toBeGreaterThan(5);
		for (const dir of ["merged", "whole"]) {
			const store = await createStore(join(root, dir));
			stores.push(store);
			for (const block of [head, ...past]) {
				const db = store.snapshot(`eip155-${CHAIN}`);
				for (const holder of holders) {
					if (holder === "0x0000000000000000000000000000000000000000") continue;
					const ours = (await tokenBalances(db, holder, block)).find((b) => b.token === token);
					const want = await balanceOf(holder, block);
					expect(ours?.raw ?? 0n, `${dir}: ${holder} at ${block}`).toBe(want);
					if (ours) expect(ours.seenAt).toBeLessThanOrEqual(block);
				}
			}
		}
	}, 240_000);

	it("a token's holders, paged by balance then address, equal balanceOf's at the head and at past blocks", async () => {
		const merged = await manifestOf(join(root, "merged"));
		const head = Number(await rpc("eth_blockNumber"));
		const runs = (merged.runs ?? []).filter((r) => r.index === "erc20_holders");
		expect(runs.length).toBeGreaterThan(0);
		const past = [...runs.map((r) => Math.floor((r.from + r.to) / 2)), head - 40];
		for (const dir of ["merged", "whole"]) {
			const store = await createStore(join(root, dir));
			stores.push(store);
			for (const block of [head, ...past]) {
				const want: [string, bigint][] = [];
				for (const h of holders) {
					if (h === ZERO_ADDRESS) continue;
					const b = await balanceOf(h, block);
					if (b !== 0n) want.push([h, b]);
				}
				want.sort((a, b) => (a[1] === b[1] ? (a[0] < b[0] ? -1 : 1) : a[1] > b[1] ? -1 : 1));
				const got: [string, bigint][] = [];
				let after: HolderCursor | undefined;
				for (let pages = 0; pages < 50; pages++) {
					const page = await tokenHolders(store.snapshot(`eip155-${CHAIN}`), token, { limit: 2, after }, block);
					if ("tooMany" in page) throw new Error("too many");
					got.push(...page.holders.map((h): [string, bigint] => [h.address, h.raw]));
					if (!page.hasMore) break;
					after = page.next;
				}
				expect(got, `${dir} at ${block}`).toEqual(want);
			}
		}
	}, 240_000);
});

async function manifestOf(dir: string): Promise<Manifest> {
	return JSON.parse(await readFile(manifestPath(dir, `eip155-${CHAIN}`), "utf8")) as Manifest;
}
