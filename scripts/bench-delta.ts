/**
 * `npm run bench:delta [-- --blocks 60 --txs 6 --rounds 2]`: what the Delta Lake export costs a
 * writer. Backfills one anvil chain (the workload plus steady activity, 4-block partitions, so
 * merges and runs happen) with the export on and off, alternating, and prints wall time, the
 * data files' and the logs' bytes, and the commits written. Figures go to BENCHMARKS.md.
 */
import { readdirSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createBackfill } from "../src/backfill/backfill.js";
import { createRpcClient } from "../src/rpc/client.js";
import { parseChainId } from "../src/util/chain.js";
import { flagUsage, startCli } from "../src/util/cli.js";
import { createMemoryLogger } from "../src/util/logger.js";
import { generateActivity } from "../src/workload/activity.js";
import { startAnvil } from "../src/workload/anvil.js";
import { runWorkload } from "../src/workload/run.js";

const options = {
	blocks: { type: "string", default: "60" },
	txs: { type: "string", default: "6" },
	rounds: { type: "string", default: "2" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({ usage: flagUsage("npm run bench:delta -- [--blocks 60] [--txs 6] [--rounds 2]", options) }),
	options,
});

/** Bytes under a folder: [data files outside logs, files inside _delta_log, commit files]. */
function sizes(dir: string): { data: number; logs: number; commits: number } {
	const out = { data: 0, logs: 0, commits: 0 };
	for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
		if (!e.isFile()) continue;
		const path = join(e.parentPath, e.name);
		const bytes = statSync(path).size;
		if (path.includes("_delta_log")) {
			out.logs += bytes;
			if (e.name.endsWith(".json")) out.commits++;
		} else if (e.name.endsWith(".parquet")) out.data += bytes;
	}
	return out;
}

const anvil = await startAnvil({ chainId: 31337 });
try {
	const workload = await runWorkload({ rpcUrl: anvil.url });
	await generateActivity({
		rpcUrl: anvil.url,
		contracts: workload.contracts,
		blocks: Number(values.blocks),
		txsPerBlock: Number(values.txs),
	});
	await fetch(anvil.url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: ["0x46"] }),
	});
	const root = await mkdtemp(join(tmpdir(), "chainlake-bench-delta-"));
	const times: Record<string, number[]> = { on: [], off: [] };
	for (let round = 0; round < Number(values.rounds); round++) {
		for (const mode of ["on", "off"] as const) {
			const dataDir = join(root, `${mode}-${round}`);
			const logger = createMemoryLogger();
			const rpc = createRpcClient({ urls: [anvil.url], logger });
			const started = performance.now();
			const s = await createBackfill({ rpc, chain: parseChainId("eip155-31337"), dataDir, logger }).run({
				from: 0,
				to: "latest",
				traces: "parity",
				partitionSize: 4,
				lake: { delta: mode === "on" },
			});
			const ms = performance.now() - started;
			times[mode]?.push(ms);
			const z = sizes(dataDir);
			console.log(
				`round ${round} delta ${mode}: ${s.blocks} blocks in ${s.chunks} chunks, ${(ms / 1000).toFixed(2)} s; parquet ${(z.data / 1024).toFixed(0)} KiB, logs ${(z.logs / 1024).toFixed(0)} KiB in ${z.commits} commits`,
			);
		}
	}
	const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
	console.log(
		`median backfill: delta on ${(median(times.on ?? []) / 1000).toFixed(2)} s, off ${(median(times.off ?? []) / 1000).toFixed(2)} s, ratio ${(median(times.on ?? []) / median(times.off ?? [])).toFixed(2)}`,
	);
	await rm(root, { recursive: true, force: true });
} finally {
	await anvil.stop();
}
