import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BackfillRun, createBackfill } from "../../src/backfill/backfill.js";
import { DATASETS } from "../../src/extract/rows.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { indexesFor } from "../../src/store/format/indexes.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { fileHashes } from "../helpers/compare.js";
import { FAULT_KINDS, type FaultProxy, startFaultProxy } from "../helpers/fault-proxy.js";
import { nodeCall } from "../helpers/node-rpc.js";

/**
 * The backfill through a faulty node: a fault-injecting proxy in front of a real anvil (running
 * the Solidity workload) faults 20% of the POSTs — JSON-RPC errors, HTTP 5xx, timeouts, closed
 * connections, 429 with Retry-After, truncated JSON, a backend that lags, a backend on another
 * fork. The proxy is the only stand-in here (anvil cannot misbehave); the backfill, DuckDB and
 * the files are real. The data folder must come out byte for byte the same as a clean run's.
 */
const CHAIN = 31337;
let anvil: AnvilInstance;
let proxy: FaultProxy;
let root: string;
let head: number;

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	await runWorkload({ rpcUrl: anvil.url });
	head = Number(await nodeCall(anvil.url, "eth_blockNumber"));
	proxy = await startFaultProxy(anvil.url, { rate: 0.2 });
	root = await mkdtemp(join(tmpdir(), "chainlake-faults-"));
});
afterAll(async () => {
	await proxy?.close();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

async function backfill(dataDir: string, url: string, range?: Partial<BackfillRun>) {
	const logger = createMemoryLogger();
	// A 1 s timeout (anvil answers in milliseconds) keeps each "timeout" fault cheap; small
	// batches and partitions make more POSTs and more chunk edges for the faults to land on.
	const rpc = createRpcClient({ urls: [url], logger, timeoutMs: 1000, heavyTimeoutMs: 1000, batchSize: 4 });
	const run = createBackfill({ rpc, chain: parseChainId(`eip155-${CHAIN}`), dataDir, logger });
	// An explicit --to: "latest" from a lagging backend would be a few blocks short, legitimately.
	const summary = await run.run({ from: 0, to: head, traces: "auto", partitionSize: 4, concurrency: 4, ...range });
	return { summary, rpc, logger };
}

describe("backfill through a node that fails 20% of requests", () => {
	it("writes the same files as a clean run, byte for byte, with every kind of fault played", async () => {
		const started = Date.now();
		const faulty = await backfill(join(root, "faulty"), proxy.url);
		const seconds = (Date.now() - started) / 1000;
		const clean = await backfill(join(root, "clean"), anvil.url);
		const context = `seed ${proxy.seed}, faults ${JSON.stringify(proxy.faults)}`;
		console.info(
			`faulty backfill: ${seconds.toFixed(1)} s, ${proxy.stats.requests} POSTs (${proxy.stats.calls} calls), ${context}, client errors ${JSON.stringify(faulty.rpc.errors)}`,
		);

		// Faults must not be taken for a node without traces (the range marked traceless).
		expect(faulty.summary.traceFormat, context).toBe("parity");
		expect(faulty.summary.rows).toEqual(clean.summary.rows);
		const expected = fileHashes(join(root, "clean", `eip155-${CHAIN}`));
		expect(Object.keys(expected).filter((f) => f.endsWith(".parquet")).length).toBe(
			// (+ block 0's token metadata tables: the node's funded accounts)
			// (every index: the chain is too short to settle, so no runs, and the balance ones are
			// derived for chunks not settled too)
			// (+ the holder ranks and wallet records, one file each: no follower keeps the folder, so
			// the backfill ranks every chunk at its end)
			Math.ceil((head + 1) / 4) * (7 + indexesFor(DATASETS).length) + 3 + 2,
		);
		// The manifest holds no timestamps, so every file, the manifest included, is comparable.
		expect(fileHashes(join(root, "faulty", `eip155-${CHAIN}`)), context).toEqual(expected);

		for (const kind of FAULT_KINDS) expect(proxy.faults[kind], `${kind}: ${context}`).toBeGreaterThan(0);
		// Each fault reached the client as what it is, and was retried (none is fatal).
		expect(Object.keys(faulty.rpc.errors).sort(), context).toEqual(
			[
				"bad_response",
				"http_error",
				"inconsistent",
				"missing_block",
				"network",
				"node_error",
				"rate_limited",
				"timeout",
			].sort(),
		);
		// No request arrived while a Retry-After the proxy sent was running: the client held back
		// every request, not only the one refused.
		expect(proxy.stats.early, context).toBe(0);
		expect(clean.rpc.health.failures).toBe(0);
	});

	it("never writes a block of another fork, even a run of them that chains", async () => {
		// In the workload's blocks a forked block mostly betrays itself: its receipts, fetched in
		// another POST, name the canonical block. Empty blocks have nothing else to disagree with,
		// and a batch of them from the fork chains among itself, so only parent hashes across
		// batches and further answers about a range's last block can catch it.
		const from = head + 1;
		for (let i = 0; i < 32; i++) await nodeCall(anvil.url, "evm_mine");
		// Requests here go one at a time (one batch per chunk, then its confirmations), so a fixed
		// seed plays the same faults on every run: 10 forked POSTs, whole chunks among them. (Each
		// confirmation is an independent draw: a forked range gets through only if its fetch and
		// both confirmations hit the fork, rate³ = 0.1% per range here, far less at realistic rates.)
		const forked = await startFaultProxy(anvil.url, { rate: 0.1, kinds: ["fork"], seed: 14 });
		try {
			const range = { from, to: from + 31, traces: "off", partitionSize: 4, concurrency: 4 } as const;
			const faulty = await backfill(join(root, "forked"), forked.url, range);
			await backfill(join(root, "forked-clean"), anvil.url, range);
			const context = `${forked.faults.fork} forked POSTs of ${forked.stats.requests}`;
			console.info(`fork-only backfill: ${context}, client errors ${JSON.stringify(faulty.rpc.errors)}`);
			expect(faulty.rpc.errors.inconsistent, context).toBeGreaterThan(0);
			expect(fileHashes(join(root, "forked", `eip155-${CHAIN}`)), context).toEqual(
				fileHashes(join(root, "forked-clean", `eip155-${CHAIN}`)),
			);
		} finally {
			await forked.close();
		}
	});
});
