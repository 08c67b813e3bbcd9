import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { startFollowers } from "../../src/follow/followers.js";
import { createStore } from "../../src/query/store/create-store.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { nodeCall, receiptBlock } from "../helpers/node-rpc.js";

/** The service with a follower on a live anvil: mined blocks show up through the API. */
const CHAIN = 31337;
const KEY = { authorization: "Bearer live-key" };
let anvil: AnvilInstance;
let dir: string;
let follow: ReturnType<typeof startFollowers>;
let app: Awaited<ReturnType<typeof buildApp>>;
let store: Awaited<ReturnType<typeof createStore>>;

const rpc = (method: string, params: unknown[]) => nodeCall(anvil.url, method, params);

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	dir = await mkdtemp(join(tmpdir(), "chainlake-live-"));
	follow = startFollowers([{ chain: `eip155-${CHAIN}`, urls: [anvil.url] }], {
		dataDir: dir,
		logger: createMemoryLogger(),
		pollMs: 100,
		finalityDepth: 4,
		partitionSize: 16,
	});
	// The chain folder appears once the follower has started.
	for (let i = 0; i < 100 && follow.sources.get(`eip155-${CHAIN}`)?.stats.lastStepAt == null; i++) {
		await new Promise((r) => setTimeout(r, 50));
	}
	store = await createStore(dir);
	app = await buildApp({
		store,
		keyring: createKeyring({ path: join(dir, "k.json"), envKeys: ["live-key"] }),
		dataDir: dir,
		followers: follow.sources,
	});
});

afterAll(async () => {
	await follow?.stop();
	await app?.close();
	store?.close();
	await anvil?.stop();
	await rm(dir, { recursive: true, force: true });
});

const get = async (url: string) => (await app.inject({ url, headers: KEY })).json();

describe("following a live chain", () => {
	it("serves each newly mined block through the API, and its transfers", async () => {
		const [from, to] = (await rpc("eth_accounts", [])) as string[];
		const seen: number[] = [];
		for (let i = 1; i <= 25; i++) {
			const hash = await rpc("eth_sendTransaction", [{ from, to, value: `0x${i.toString(16)}` }]);
			// The block the transaction landed in, from its receipt: anvil's eth_blockNumber can
			// still report the previous block right after eth_sendTransaction.
			const n = await receiptBlock(anvil.url, hash);
			const deadline = Date.now() + 10_000;
			while ((await get(`/eip155-${CHAIN}/v1/blocks/latest`)).number !== n && Date.now() < deadline) {
				await new Promise((r) => setTimeout(r, 20));
			}
			seen.push((await get(`/eip155-${CHAIN}/v1/blocks/latest`)).number);
		}
		const head = Number(await rpc("eth_blockNumber", []));
		expect(seen.at(-1)).toBe(head);
		const transfers = await get(`/eip155-${CHAIN}/v1/address/${to}/transfers?asset_type=native&limit=1000`);
		expect(transfers.items.map((t: { value: string }) => t.value)).toEqual(
			Array.from({ length: 25 }, (_, i) => String(i + 1)),
		);
		// Compaction ran (partition 16, finality 4) and the blocks are still all there, once each.
		const blocks = await get(`/eip155-${CHAIN}/v1/blocks?block_number_start=0&block_number_end=latest&limit=1000`);
		expect(blocks.items.map((b: { number: number }) => b.number)).toEqual(
			Array.from({ length: head + 1 }, (_, i) => i),
		);
		const ready = (await app.inject({ url: "/readyz" })).json();
		expect(ready.chains[0].follower).toMatchObject({ lag_blocks: 0, reorgs: 0 });
		const metrics = (await app.inject({ url: "/metrics", headers: { authorization: "Bearer live-key" } })).body;
		expect(metrics).toContain(`chainlake_head_block{chain="eip155-${CHAIN}"} ${head}`);
		expect(metrics).toMatch(
			/chainlake_http_request_duration_seconds_count\{route="\/:chain_id\/v1\/blocks\/latest"\} \d+/,
		);
	});
});
