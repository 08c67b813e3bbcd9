import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manifestPath } from "../../src/store/format/layout.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { manifestTime, spread, storedAt } from "../helpers/manifest-times.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";
import { listedItems, type ServeProcess, startServe } from "../helpers/serve-process.js";
import { appliedItems, openSse } from "../helpers/sse.js";

/**
 * A stream from a reader process beside the writer (issue 29 "in every deployment"): `serve
 * --follow` writes the folder, a plain `serve` over the same folder answers the stream, and
 * learns of new blocks only from the lake (the manifest's rename; its poll as fallback). A
 * wallet's transfers from block 0 while blocks are mined one at a time and a reorg (evm_snapshot,
 * 2 blocks, evm_revert, 3 others): the consumer ends with exactly the reader's list route items.
 * It prints the time from the writer storing each block (its manifest's mtime) to the reader's item.
 */
const CHAIN = "eip155-31337";
const KEY = "reader-stream-key-0123";
const AUTH = { authorization: `Bearer ${KEY}` };
let anvil: AnvilInstance;
let work: WorkloadResult;
let dir: string;
const procs: ServeProcess[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 60_000) {
	for (const end = Date.now() + ms; Date.now() < end; await sleep(20)) if (await ok()) return;
	throw new Error(`timed out waiting for ${what}; output:\n${procs.map((p) => p.output().slice(-2000)).join("\n")}`);
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: 31337 });
	work = await runWorkload({ rpcUrl: anvil.url });
	dir = await mkdtemp(join(tmpdir(), "chainlake-reader-stream-"));
}, 60_000);

afterAll(async () => {
	await Promise.all(procs.map((p) => p.stop()));
	await anvil?.stop();
	if (dir) await rm(dir, { recursive: true, force: true });
});

describe("a stream from a reader process beside the writer", () => {
	it("gets each new block's items from the lake, through a reorg: exactly the list route's", async () => {
		const env = { CHAINLAKE_API_KEYS: KEY };
		const follow = ["--follow", `${CHAIN}=${anvil.url}`, "--poll-ms", "50", "--finality-depth", "8"];
		procs.push(await startServe(["--data-dir", dir, ...follow], env));
		const reader = await startServe(["--data-dir", dir, "--stream-heartbeat-ms", "500"], env);
		procs.push(reader);
		const head = async () => Number(await nodeCall(anvil.url, "eth_blockNumber"));
		const tip = await head();
		await storedAt(manifestPath(dir, CHAIN), tip);
		const wallet = work.accounts.alice.toLowerCase();
		const path = `${reader.base}/${CHAIN}/v1/address/${wallet}/transfers?asset_type=native,ft,nft`;
		const stream = openSse(`${path}&block_number_start=0`, AUTH);
		await until("the stream at the workload's head", () =>
			stream.events.some((e) => e.event === "head" && JSON.parse(e.data).scanned_through === tip),
		);

		// From the next block on, past the stored head: only the blocks to come.
		const future = openSse(`${path}&block_number_start=${tip + 1}`, AUTH);
		const pay = (v: number) =>
			sendMined(anvil.url, { from: work.accounts.bob, to: wallet, value: `0x${v.toString(16)}` });
		/** Mines a payment and measures writer-stored → reader's item for its block. */
		const latencies: number[] = [];
		const payAndTime = async (v: number) => {
			const before = manifestTime(manifestPath(dir, CHAIN));
			const block = await pay(v);
			const stored = await storedAt(manifestPath(dir, CHAIN), block, before);
			// By its value: after the reorg, a block of the old branch had the same number.
			const mine = (data: string) => JSON.parse(data).value === String(v);
			await until(
				`the item of block ${block} (${stream.events
					.slice(-3)
					.map((e) => e.data)
					.join("\n")})`,
				() => stream.events.some((e) => e.event === "item" && mine(e.data)),
			);
			const i = stream.events.findIndex((e) => e.event === "item" && mine(e.data));
			latencies.push((stream.times[i] as number) - stored);
		};
		for (let v = 1; v <= 4; v++) await payAndTime(9000 + v);
		// A reorg 2 blocks deep: the stream has both blocks' items, then the node goes back and mines 3 others.
		const snap = await nodeCall(anvil.url, "evm_snapshot");
		for (let v = 1; v <= 2; v++) await payAndTime(9100 + v);
		await nodeCall(anvil.url, "evm_revert", [snap]);
		// The new branch is taken once it is longer than the stored one (the follower's rule): the
		// third block's commit carries the reorg and all three blocks.
		for (let v = 1; v <= 2; v++) await pay(9200 + v);
		await payAndTime(9203);
		expect(stream.events.filter((e) => e.event === "reorg").length).toBeGreaterThanOrEqual(1);

		const last = await head();
		await until("the stream at the node's head", () =>
			stream.events.some((e) => e.event === "head" && JSON.parse(e.data).scanned_through === last),
		);
		const want = await listedItems(path, AUTH);
		await until(
			`the stream from the next block at the node's head (${future.status()}: ${future.body().slice(0, 300)})`,
			() => future.events.some((e) => e.event === "head" && JSON.parse(e.data).scanned_through === last),
		);
		stream.close();
		future.close();
		const got = appliedItems(stream.events);
		expect(got).toEqual(want);
		expect(future.status()).toBe(200);
		expect(appliedItems(future.events)).toEqual(want.filter((t) => Number(t.block_number) > tip));
		expect(got.map((t) => t.value)).toEqual(expect.arrayContaining(["9203", "9004"]));
		expect(got.map((t) => t.value)).not.toContain("9101");
		console.log(
			`reader process beside serve --follow: writer stored block -> reader's item: ${spread(latencies)} blocks`,
		);
		latencies.sort((x, y) => x - y);
		// Generous (a loaded machine): the reader's poll fallback alone is 250 ms.
		expect(latencies.at(-1)).toBeLessThan(5000);
	}, 90_000);
});
