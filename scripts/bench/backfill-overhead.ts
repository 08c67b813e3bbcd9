import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBackfill, DEFAULT_CONCURRENCY } from "../../src/backfill/backfill.js";
import { fetchBlockBundle } from "../../src/rpc/actions.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { parseChainId } from "../../src/util/chain.js";
import { createLogger } from "../../src/util/logger.js";
import { generateActivity } from "../../src/workload/activity.js";
import { startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";

export interface BackfillOverhead {
	blocks: number;
	txs: number;
	/** Best of the runs, seconds. */
	fetchOnly: number;
	backfill: number;
	runs: number;
}

/**
 * Backfill speed against the floor the node sets: a plain loop that makes the same RPC calls
 * (block with transactions, block receipts, trace_block), with the same client, batching and
 * concurrency, and drops the answers. The difference is our decoding, checking and writing.
 * Runs alternate (fetch, backfill, fetch, backfill, ...) so a noisy neighbour hits both.
 */
export async function measureBackfillOverhead(opts: {
	blocks: number;
	txsPerBlock: number;
	runs: number;
	/** Blocks per chunk; several chunks let the backfill overlap fetching one with writing another. */
	partitionSize: number;
}): Promise<BackfillOverhead> {
	const anvil = await startAnvil({ chainId: 31337 });
	try {
		const work = await runWorkload({ rpcUrl: anvil.url });
		const activity = await generateActivity({
			rpcUrl: anvil.url,
			contracts: work.contracts,
			blocks: opts.blocks,
			txsPerBlock: opts.txsPerBlock,
		});
		const logger = createLogger({ quiet: true });
		const head = Number(
			BigInt(
				(
					(await (
						await fetch(anvil.url, {
							method: "POST",
							headers: { "content-type": "application/json" },
							body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
						})
					).json()) as { result: string }
				).result,
			),
		);
		const fetchOnly: number[] = [];
		const backfill: number[] = [];
		for (let run = 0; run < opts.runs; run++) {
			const rpc = createRpcClient({ urls: [anvil.url], logger });
			let t = performance.now();
			let next = 0;
			const worker = async () => {
				while (next <= head) {
					const n = next++;
					await fetchBlockBundle(rpc, n, "parity", { blockReceipts: true });
				}
			};
			await Promise.all(Array.from({ length: DEFAULT_CONCURRENCY }, worker));
			fetchOnly.push((performance.now() - t) / 1000);

			const dir = await mkdtemp(join(tmpdir(), "chainlake-bench-bf-"));
			t = performance.now();
			await createBackfill({
				rpc: createRpcClient({ urls: [anvil.url], logger }),
				chain: parseChainId("eip155-31337"),
				dataDir: dir,
				logger,
			}).run({ from: 0, to: head, traces: "parity", partitionSize: opts.partitionSize });
			backfill.push((performance.now() - t) / 1000);
			await rm(dir, { recursive: true, force: true });
		}
		return {
			blocks: head + 1,
			txs: work.txs.length + activity.txs,
			fetchOnly: Math.min(...fetchOnly),
			backfill: Math.min(...backfill),
			runs: opts.runs,
		};
	} finally {
		await anvil.stop();
	}
}
