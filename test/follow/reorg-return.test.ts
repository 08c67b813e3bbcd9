import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createFollower } from "../../src/follow/follower.js";
import { createStore } from "../../src/query/store/create-store.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { manifestPath } from "../../src/store/format/layout.js";
import type { Manifest } from "../../src/store/format/records.js";
import { listedPaths } from "../../src/store/indexes/listing.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { datasetRows } from "../helpers/compare.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * A reorg that comes back to a block it replaced (A → B → A at the same height), on a real anvil
 * node with the follower polling and deleting retired files after its grace period: the sequence
 * of the bug report, with evm_snapshot / evm_revert. Before file names carried the manifest
 * generation, A's new files had the path of A's retired ones, and the first reorg's retire timer
 * deleted them: the manifest listed missing files and every route answered 500.
 */
const CHAIN = 31337;
const GRACE_MS = 1500;
const POLL_MS = 200;
let anvil: AnvilInstance;
let root: string;
let dataDir: string;
let follower: ReturnType<typeof createFollower>;

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const block = async (tag: string) =>
	(await rpc("eth_getBlockByNumber", [tag, false])) as { hash: string; number: string; timestamp: string };
const manifest = async () => JSON.parse(await readFile(manifestPath(dataDir, `eip155-${CHAIN}`), "utf8")) as Manifest;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the follower has stored block `n` with hash `hash`. */
async function stored(n: number, hash: string): Promise<void> {
	for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(100)) {
		const m = await manifest().catch(() => null);
		if (m?.chunks.some((c) => c.to === n && c.last_hash === hash)) return;
	}
	throw new Error(`the follower did not store block ${n} = ${hash}`);
}

beforeAll(async () => {
	// A zero base fee: otherwise the base fee after a revert differs and A's hash cannot come back.
	anvil = await startAnvil({ chainId: CHAIN, args: ["--block-base-fee-per-gas", "0"] });
	const accounts = (await rpc("eth_accounts")) as string[];
	for (let i = 0; i < 6; i++)
		await sendMined(anvil.url, { from: accounts[0] as string, to: accounts[1] as string, value: "0x1" });
	root = await mkdtemp(join(tmpdir(), "chainlake-reorg-return-"));
	dataDir = join(root, "followed");
	const logger = createMemoryLogger();
	follower = createFollower({
		rpc: createRpcClient({ urls: [anvil.url], logger }),
		chain: parseChainId(`eip155-${CHAIN}`),
		dataDir,
		logger,
		traces: "parity",
		finalityDepth: 12,
		partitionSize: 16,
		pollMs: POLL_MS,
		deleteGraceMs: GRACE_MS,
	});
	follower.start();
});

afterAll(async () => {
	await follower?.stop();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

describe("a reorg A → B → A at one height", () => {
	it("keeps every listed file, equals a clean backfill, and the API answers", async () => {
		const tip = await block("latest");
		await stored(Number(tip.number), tip.hash);
		const t = Number(tip.timestamp) + 12;

		const s0 = await rpc("evm_snapshot");
		await rpc("evm_mine", [t]);
		const a = await block("latest");
		const n = Number(a.number);
		await stored(n, a.hash);

		await rpc("evm_revert", [s0]);
		const s1 = await rpc("evm_snapshot");
		await rpc("evm_mine", [t + 100]);
		const b = await block("latest");
		expect(Number(b.number)).toBe(n);
		expect(b.hash).not.toBe(a.hash);
		await stored(n, b.hash);

		await rpc("evm_revert", [s1]);
		await rpc("evm_mine", [t]);
		expect((await block("latest")).hash).toBe(a.hash);
		await stored(n, a.hash);

		// Every retire timer of both reorgs has fired (and the follower kept polling meanwhile).
		await sleep(GRACE_MS * 2 + POLL_MS * 3);
		expect(follower.stats.reorgs).toBe(2);

		const m = await manifest();
		const missing = [...listedPaths(dataDir, m)].filter((f) => !existsSync(f));
		expect(missing).toEqual([]);
		// B is a ghost; A, canonical again, is not.
		const ghostHashes = (m.ghosts ?? []).flatMap((g) => g.hashes ?? []);
		expect(ghostHashes).toContain(b.hash);
		expect(ghostHashes).not.toContain(a.hash);
		const canonical = new Set(m.chunks.map((c) => c.last_hash));
		expect(ghostHashes.filter((h) => canonical.has(h))).toEqual([]);

		const fresh = join(root, "fresh");
		await backfillInto(fresh, anvil.url, CHAIN, { traces: "parity", partitionSize: 16 });
		const [followed, clean] = await Promise.all([datasetRows(dataDir, CHAIN), datasetRows(fresh, CHAIN)]);
		for (const d of Object.keys(clean)) expect(followed[d], d).toEqual(clean[d]);

		const store = await createStore(dataDir);
		const app = await buildApp({
			store,
			keyring: createKeyring({ path: join(root, "keys.json"), envKeys: ["k"] }),
			dataDir,
		});
		try {
			const get = (path: string) =>
				app.inject({ url: `/eip155-${CHAIN}/v1${path}`, headers: { authorization: "Bearer k" } });
			const latest = await get("/blocks/latest");
			expect(latest.statusCode).toBe(200);
			expect(latest.json()).toMatchObject({ number: n, hash: a.hash, ghost: false });
			expect((await get(`/blocks/${a.hash}`)).json()).toMatchObject({ hash: a.hash, ghost: false });
			expect((await get(`/blocks/${b.hash}`)).json()).toMatchObject({ hash: b.hash, ghost: true });
			const range = await get(`/blocks?block_number_start=0&block_number_end=${n}`);
			expect(range.statusCode).toBe(200);
			expect(range.json().items).toHaveLength(n + 1);
		} finally {
			await app.close();
			store.close();
		}
	});
});
