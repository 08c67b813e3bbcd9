import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createFollower } from "../../src/follow/follower.js";
import { createStore } from "../../src/query/store/create-store.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { datasetRows } from "../helpers/compare.js";
import { FAULT_KINDS, type FaultProxy, startFaultProxy } from "../helpers/fault-proxy.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * The head follower through a faulty node: a fault-injecting proxy in front of a real anvil
 * faults 20% of the POSTs (JSON-RPC errors, HTTP 5xx, timeouts, closed connections, 429 with
 * Retry-After, truncated JSON, a lagging backend, a backend on another fork) while the follower
 * catches up on the workload chain and new blocks keep arriving. The proxy is the only stand-in
 * (anvil cannot misbehave); follower, DuckDB, files and API are real. At the end every dataset
 * equals a clean backfill's, no fault was taken for a reorg, and /readyz tells the node is unwell.
 */
const CHAIN = 31337;
let anvil: AnvilInstance;
let proxy: FaultProxy;
let root: string;

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	await runWorkload({ rpcUrl: anvil.url });
	proxy = await startFaultProxy(anvil.url, { rate: 0.2 });
	root = await mkdtemp(join(tmpdir(), "chainlake-follow-faults-"));
});
afterAll(async () => {
	await proxy?.close();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("following through a node that fails 20% of requests", () => {
	it("stores the same rows as a clean backfill, and readiness reports the faulty node", async () => {
		const dir = join(root, "followed");
		const chain = `eip155-${CHAIN}`;
		const logger = createMemoryLogger();
		// A 1 s timeout keeps each "timeout" fault cheap (anvil answers in milliseconds).
		const rpc = createRpcClient({ urls: [proxy.url], logger, timeoutMs: 1000, heavyTimeoutMs: 1000, batchSize: 4 });
		const follower = createFollower({
			...{ rpc, chain: parseChainId(chain), dataDir: dir, logger, traces: "auto" },
			...{ finalityDepth: 3, partitionSize: 4, pollMs: 200, concurrency: 4 },
		});
		const started = Date.now();
		follower.start();
		let store: Awaited<ReturnType<typeof createStore>> | undefined;
		let app: Awaited<ReturnType<typeof buildApp>> | undefined;
		try {
			// New blocks arrive while the follower catches up on the workload chain, and after.
			const [from, to] = (await nodeCall(anvil.url, "eth_accounts")) as string[];
			for (let i = 1; i <= 12; i++) {
				await sendMined(anvil.url, { from: from as string, to: to as string, value: `0x${i.toString(16)}` });
				await sleep(100);
			}
			const head = Number(await nodeCall(anvil.url, "eth_blockNumber"));
			const deadline = Date.now() + 60_000;
			while ((follower.stats.storedHead ?? -1) < head && Date.now() < deadline) await sleep(20);
			const seconds = (Date.now() - started) / 1000;
			const context = `seed ${proxy.seed}, faults ${JSON.stringify(proxy.faults)}`;
			console.info(
				`follower: head ${head} stored in ${seconds.toFixed(1)} s, ${proxy.stats.requests} POSTs (${proxy.stats.calls} calls), ${context}, client errors ${JSON.stringify(rpc.errors)}, follower faults ${follower.stats.faults}`,
			);
			expect(follower.stats.storedHead, context).toBe(head);
			for (const kind of FAULT_KINDS) expect(proxy.faults[kind], `${kind}: ${context}`).toBeGreaterThan(0);
			// A lagging or forked answer about the stored tip was asked again, not taken for a reorg.
			expect(follower.stats.reorgs, context).toBe(0);

			// Readiness, as an operator sees it while the follower runs.
			store = await createStore(dir);
			app = await buildApp({
				store,
				keyring: createKeyring({ path: join(root, "keys.json"), envKeys: ["k"] }),
				dataDir: dir,
				followers: new Map([[chain, { stats: follower.stats, rpcErrors: rpc.errors }]]),
			});
			const res = await app.inject({ url: "/readyz" });
			// The stored data is served: the API stays ready; the node's trouble is reported beside it.
			expect(res.statusCode).toBe(200);
			const f = res.json().chains[0].follower;
			expect(f.node.status, JSON.stringify(f)).toBe("degraded");
			expect(f.node.failures).toBeGreaterThan(0);
			expect(f.node.failures).toBeLessThan(f.node.attempts);
			expect(f.node.last_error).toMatchObject({ kind: expect.any(String), message: expect.any(String) });
			expect(Date.parse(f.node.last_error.at)).toBeGreaterThan(started);
			for (const kind of ["timeout", "network", "http_error", "rate_limited", "bad_response", "node_error"]) {
				expect(f.rpc_errors[kind], `${kind}: ${JSON.stringify(f.rpc_errors)}`).toBeGreaterThan(0);
			}
			// Lagging and forked backends answer without an error; they show as answers found wrong.
			expect((f.rpc_errors.missing_block ?? 0) + (f.rpc_errors.inconsistent ?? 0)).toBeGreaterThan(0);
			const metrics = (await app.inject({ url: "/metrics", headers: { authorization: "Bearer k" } })).body;
			expect(metrics).toMatch(new RegExp(`chainlake_rpc_requests_total\\{chain="${chain}"\\} [1-9]`));
			expect(metrics).toMatch(new RegExp(`chainlake_rpc_errors_total\\{chain="${chain}",kind="timeout"\\} [1-9]`));
			// The Delta Lake logs kept up through the faults (a failed export would be counted here).
			expect(f.delta_export).toEqual({ failures: 0, problem: null });
			expect(metrics).toContain(`chainlake_delta_export_failures_total{chain="${chain}"} 0`);
		} finally {
			await app?.close();
			store?.close();
			await follower.stop();
		}

		const clean = join(root, "clean");
		await backfillInto(clean, anvil.url, CHAIN, { traces: "auto" });
		const [followed, expected] = await Promise.all([datasetRows(dir, CHAIN), datasetRows(clean, CHAIN)]);
		expect(expected.traces?.length).toBeGreaterThan(0);
		for (const d of Object.keys(expected)) expect(followed[d], d).toEqual(expected[d]);
	});
});
