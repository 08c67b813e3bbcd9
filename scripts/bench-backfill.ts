/**
 * Backfill speed on the anvil workload: `npm run bench:backfill [-- --blocks 300 --txs 20 --partition-size 1000]`.
 * Starts anvil, runs the Solidity workload plus `--blocks` blocks of mixed activity, backfills
 * everything into a temp folder, and prints blocks/s, rows/s and bytes per row of each dataset.
 */

import { readdirSync } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createBackfill } from "../src/backfill/backfill.js";
import { DATASETS } from "../src/extract/rows.js";
import { createRpcClient } from "../src/rpc/client.js";
import { datasetDir } from "../src/store/format/layout.js";
import { parseChainId } from "../src/util/chain.js";
import { flagUsage, startCli } from "../src/util/cli.js";
import { createLogger } from "../src/util/logger.js";
import { generateActivity } from "../src/workload/activity.js";
import { startAnvil } from "../src/workload/anvil.js";
import { runWorkload } from "../src/workload/run.js";
import { folderBytes } from "./bench/measure.js";

const options = {
	blocks: { type: "string", default: "300" },
	txs: { type: "string", default: "20" },
	// Blocks per file: small values make many small chunks (as the follower's head files are).
	"partition-size": { type: "string", default: "1000" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage("npm run bench:backfill -- [--blocks 300] [--txs 20] [--partition-size 1000]", options),
	}),
	options,
});
// A block gas limit that holds `--txs` transactions of the activity's 500,000 gas each (anvil's
// default 30M holds 60), so each activity block carries exactly that many.
const gasLimit = Math.max(30_000_000, Number(values.txs) * 500_000 + 1_000_000);
const anvil = await startAnvil({ chainId: 31337, args: ["--gas-limit", String(gasLimit)] });
const dir = await mkdtemp(join(tmpdir(), "chainlake-bench-"));
try {
	const work = await runWorkload({ rpcUrl: anvil.url });
	const activity = await generateActivity({
		rpcUrl: anvil.url,
		contracts: work.contracts,
		blocks: Number(values.blocks),
		txsPerBlock: Number(values.txs),
	});
	const logger = createLogger({ quiet: true });
	const backfill = createBackfill({
		rpc: createRpcClient({ urls: [anvil.url], logger }),
		chain: parseChainId("eip155-31337"),
		dataDir: dir,
		logger,
	});
	const s = await backfill.run({
		from: 0,
		to: "latest",
		traces: "parity",
		partitionSize: Number(values["partition-size"]),
	});
	const totalRows = Object.values(s.rows).reduce((a, b) => a + b, 0);
	console.log(
		`anvil workload: ${s.blocks} blocks, ${work.txs.length + activity.txs} txs (${values.txs}/block of activity), traces ${s.traceFormat}`,
	);
	console.log(`rows a block: ${DATASETS.map((d) => `${d} ${(s.rows[d] / s.blocks).toFixed(1)}`).join(", ")}`);
	console.log(
		`backfill: ${s.chunks} chunks, ${s.seconds.toFixed(2)} s, ${(s.blocks / s.seconds).toFixed(1)} blocks/s, ${(totalRows / s.seconds).toFixed(0)} rows/s`,
	);
	const chainBytes = folderBytes(join(dir, "eip155-31337"));
	console.log(
		`disk: whole chain folder ${chainBytes} bytes (${(chainBytes / totalRows).toFixed(1)} bytes/row, ${(chainBytes / s.blocks).toFixed(0)} bytes/block: datasets, index files and runs, Delta logs); peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB (this process: the backfill and the workload's client)`,
	);
	console.log("| dataset | rows | bytes | bytes/row |\n|---|---:|---:|---:|");
	for (const d of DATASETS) {
		const ddir = datasetDir(dir, "eip155-31337", d);
		let bytes = 0;
		for (const f of readdirSync(ddir)) bytes += (await stat(join(ddir, f))).size;
		const rows = s.rows[d];
		console.log(`| ${d} | ${rows} | ${bytes} | ${rows ? (bytes / rows).toFixed(1) : "-"} |`);
	}
} finally {
	await anvil.stop();
	await rm(dir, { recursive: true, force: true });
}
