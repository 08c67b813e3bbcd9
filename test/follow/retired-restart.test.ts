import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFollower } from "../../src/follow/follower.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { chainDir, manifestPath } from "../../src/store/format/layout.js";
import type { Manifest } from "../../src/store/format/records.js";
import { listedPaths } from "../../src/store/indexes/listing.js";
import { readRetired } from "../../src/store/retire/retired-journal.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * Files a reorg took out of the manifest stay on disk for readers in other processes for the
 * grace period, even when the follower restarts meanwhile: `_retired.json` carries them over, so
 * the next start keeps them until due instead of removing them as leftovers at once. With the
 * Delta export on, its retention keeps them anyway, so it is off here: the journal alone decides.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const POLL_MS = 200;
let anvil: AnvilInstance;
let root: string;
let dataDir: string;

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const block = async (tag: string) =>
	(await rpc("eth_getBlockByNumber", [tag, false])) as { hash: string; number: string };
const manifest = async () => JSON.parse(await readFile(manifestPath(dataDir, CHAIN_ID), "utf8")) as Manifest;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function follower(deleteGraceMs: number) {
	const logger = createMemoryLogger();
	return createFollower({
		rpc: createRpcClient({ urls: [anvil.url], logger }),
		chain: parseChainId(CHAIN_ID),
		dataDir,
		logger,
		traces: "parity",
		finalityDepth: 12,
		partitionSize: 16,
		pollMs: POLL_MS,
		deleteGraceMs,
		lake: { delta: false },
	});
}

async function stored(hash: string): Promise<void> {
	for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(100)) {
		const m = await manifest().catch(() => null);
		if (m?.chunks.some((c) => c.last_hash === hash)) return;
	}
	throw new Error(`the follower did not store the block ${hash}`);
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	const accounts = (await rpc("eth_accounts")) as string[];
	for (let i = 0; i < 5; i++)
		await sendMined(anvil.url, { from: accounts[0] as string, to: accounts[1] as string, value: "0x1" });
	root = await mkdtemp(join(tmpdir(), "chainlake-retired-restart-"));
	dataDir = join(root, "data");
});

afterAll(async () => {
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

describe("files retired by a reorg, across a follower restart", () => {
	it("are kept until due by the next start, then deleted", async () => {
		const first = follower(60_000);
		first.start();
		await stored((await block("latest")).hash);
		// No block is final yet (6 blocks, finality 12), and the manifest says so: -1, which also marks
		// the folder a follower's (its writers rank settled chunks only: holder-ranks.ts), so no holder
		// ranks are written at a tip the reorg below replaces.
		expect((await manifest()).final_through).toBe(-1);
		expect((await manifest()).ranks).toBeUndefined();
		const before = new Set(listedPaths(dataDir, await manifest()));

		// A reorg of the last two blocks: the files holding them leave the manifest.
		await rpc("anvil_reorg", [2, []]);
		const tip = await block("latest");
		await stored(tip.hash);
		await first.stop();
		const after = new Set(listedPaths(dataDir, await manifest()));
		const retired = [...before].filter((f) => !after.has(f));
		expect(retired.length).toBeGreaterThan(0);
		const chain = chainDir(dataDir, CHAIN_ID);
		const noted = readRetired(chain).flatMap((e) => e.files.map((f) => join(chain, f)));
		expect(noted.sort()).toEqual(retired.sort());

		// A restart within the grace: the retired files are still there for other processes' readers.
		const second = follower(60_000);
		second.start();
		await sleep(POLL_MS * 5);
		await second.stop();
		expect(retired.filter((f) => !existsSync(f))).toEqual([]);
		expect(readRetired(chain).flatMap((e) => e.files).length).toBe(retired.length);

		// Once due (the journal's time moved back), the next start deletes them and forgets them.
		const journal = join(chain, "_retired.json");
		const entries = readRetired(chain).map((e) => ({ ...e, due: Date.now() - 1 }));
		await writeFile(journal, JSON.stringify(entries));
		const third = follower(60_000);
		third.start();
		for (const deadline = Date.now() + 10_000; Date.now() < deadline && retired.some(existsSync); ) await sleep(100);
		await third.stop();
		expect(retired.filter((f) => existsSync(f))).toEqual([]);
		expect(readRetired(chain)).toEqual([]);
		// Nothing listed was touched.
		expect([...listedPaths(dataDir, await manifest())].filter((f) => !existsSync(f))).toEqual([]);
	});
});
