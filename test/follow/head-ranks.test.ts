import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStore } from "../../src/query/store/create-store.js";
import { rankFiles, readManifestSafe } from "../../src/store/format/manifest.js";
import { headRanksOf, type Manifest } from "../../src/store/format/records.js";
import { usableHeadRanks } from "../../src/store/holdings/head-ranks.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { followUntil } from "../helpers/followed-lake.js";
import { holderPages } from "../helpers/holder-pages.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * Head ranks (src/store/holdings/head-ranks.ts) kept by the real follower (`npm run follow`): a
 * token moving in the blocks after the holder ranks' block gets its holdings ranked near the head,
 * its holders pages there read them and equal a clean backfill's, and as the chain moves on the
 * follower builds them again further up, unlisting the old ones. Every token with a holding
 * changed qualifies here (CHAINLAKE_HEAD_RANKS_MIN_CHANGES=1: the default, a thousand, is more
 * than a test chain has). Real anvil, real CLI, real Parquet.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const ERC20 = parseAbi(["function transfer(address, uint256) returns (bool)"]);
let anvil: AnvilInstance;
let root: string;
let token: string;
let deployer: string;
let accounts: string[];

const followed = () => join(root, "followed");
const manifest = () => readManifestSafe(followed(), CHAIN_ID) as Manifest;
/** `n` transfers of the token from the deployer, each in a block of its own; the last one's block. */
async function moves(n: number, amount: bigint): Promise<number> {
	let last = 0;
	for (let i = 0; i < n; i++)
		last = await sendMined(anvil.url, {
			from: deployer,
			to: token,
			data: encodeFunctionData({
				abi: ERC20,
				functionName: "transfer",
				args: [accounts[1 + (i % 8)] as `0x${string}`, amount + BigInt(i)],
			}),
		});
	return last;
}
/** The follower's holders pages against a clean backfill's, reading its head ranks. */
async function sameAsBackfill(name: string) {
	const clean = join(root, name);
	await backfillInto(clean, anvil.url, CHAIN, { partitionSize: 4, traces: "parity", lake: { delta: false } });
	const [mine, theirs] = await Promise.all([createStore(followed()), createStore(clean)]);
	try {
		const db = () => mine.snapshot(CHAIN_ID);
		expect(Object.keys(db().headRanks()?.tokens ?? {})).toContain(token);
		const want = await holderPages(theirs.snapshot(CHAIN_ID), token, 1000);
		expect(want.length).toBeGreaterThan(3);
		for (const limit of [1, 4, 1000]) expect(await holderPages(db(), token, limit)).toEqual(want);
	} finally {
		mine.close();
		theirs.close();
	}
}

beforeAll(async () => {
	process.env.CHAINLAKE_HEAD_RANKS_MIN_CHANGES = "1";
	anvil = await startAnvil({ chainId: CHAIN });
	const workload = await runWorkload({ rpcUrl: anvil.url });
	token = workload.contracts.token20.toLowerCase();
	deployer = workload.accounts.deployer.toLowerCase();
	accounts = ((await nodeCall(anvil.url, "eth_accounts")) as string[]).map((a) => a.toLowerCase());
	root = await mkdtemp(join(tmpdir(), "chainlake-head-ranks-"));
}, 120_000);
afterAll(async () => {
	delete process.env.CHAINLAKE_HEAD_RANKS_MIN_CHANGES;
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("head ranks, as the follower keeps them", () => {
	it("are written near the head for a token moving there, read by its pages, and moved up as the chain moves", async () => {
		// Holdings spread over many blocks, then moved in the last few (within the finality depth
		// and the open partition: after the holder ranks' block).
		await moves(12, 10n ** 18n);
		const last = await moves(3, 5n * 10n ** 20n);
		const first = await followUntil(followed(), anvil.url, CHAIN);
		expect(first.code, first.log).toBe(0);
		const m = manifest();
		const ranks = m.ranks?.[0];
		const head = headRanksOf(m);
		expect(ranks && head, JSON.stringify(m.ranks)).toBeTruthy();
		expect(head?.to).toBeGreaterThan(ranks?.to as number);
		expect(head?.to).toBeGreaterThanOrEqual(last - 1);
		expect(Object.keys(head?.tokens ?? {})).toContain(token);
		expect(usableHeadRanks(followed(), m)).toEqual(head);
		const files = rankFiles(followed(), { ...m, ranks: [head as NonNullable<typeof head>] });
		expect(files.length).toBeGreaterThan(0);
		for (const f of files) expect(existsSync(f), f).toBe(true);
		await sameAsBackfill("clean-1");

		// Ten more blocks moving it: built again higher up, the old files no longer listed.
		const later = await moves(10, 7n * 10n ** 19n);
		const second = await followUntil(followed(), anvil.url, CHAIN);
		expect(second.code, second.log).toBe(0);
		const m2 = manifest();
		const head2 = headRanksOf(m2);
		expect(head2?.to).toBeGreaterThan(head?.to as number);
		expect(head2?.to).toBeGreaterThanOrEqual(later - 8);
		expect(head2?.gen).toBeGreaterThan(head?.gen as number);
		const listed = rankFiles(followed(), m2);
		for (const f of files) expect(listed).not.toContain(f);
		await sameAsBackfill("clean-2");
	});
});
