/**
 * `npm run backfill -- ...`: exports a chain range from JSON-RPC into Parquet (see README).
 * SIGTERM/SIGINT stop it cleanly after the chunk being written (exit 143/130); a second one exits at once.
 */
import { createBackfill, InterruptedError } from "../src/backfill/backfill.js";
import { parseBackfillOptions } from "../src/backfill/options.js";
import { createRpcClient } from "../src/rpc/client.js";
import { diskFullError, isDiskFull } from "../src/util/disk-full.js";
import { ChainlakeError, UserInputError } from "../src/util/errors.js";
import { createLogger } from "../src/util/logger.js";
import { onStopSignal, SIGNAL_EXIT_CODE, type StopSignal } from "../src/util/stop-signals.js";

let dataDir = "data";

async function main(): Promise<number> {
	const opts = parseBackfillOptions(process.argv.slice(2));
	const logger = createLogger({ verbose: opts.verbose });
	dataDir = opts.dataDir;
	const stop = new AbortController();
	onStopSignal((signal) => stop.abort(signal), logger.warn);
	const rpc = createRpcClient({ urls: opts.rpcUrls, batchSize: opts.batchSize, logger });
	const backfill = createBackfill({ rpc, chain: opts.chain, dataDir: opts.dataDir, logger });
	const s = await backfill.run({ ...opts, signal: stop.signal });
	const rows = Object.entries(s.rows)
		.map(([d, n]) => `${d}=${n}`)
		.join(" ");
	logger.info(
		`done: ${opts.chain.id} blocks ${s.from}..${s.to}: ${s.blocks} fetched in ${s.chunks} chunks in ${s.seconds.toFixed(1)}s ` +
			`(${(s.blocks / s.seconds).toFixed(1)} blocks/s); rows ${rows}; files under ${opts.dataDir}/${opts.chain.id}`,
	);
	return 0;
}

main().then(
	(code) => process.exit(code),
	async (err: unknown) => {
		if (err instanceof InterruptedError) {
			process.stderr.write(`${err.message}\n`);
			process.exit(SIGNAL_EXIT_CODE[err.reason as StopSignal] ?? 1);
		}
		// A full disk met outside the export loop (the lock file, say): named the same way.
		if (!(err instanceof ChainlakeError) && isDiskFull(err)) err = await diskFullError(dataDir, err);
		if (err instanceof ChainlakeError) {
			process.stderr.write(`error [${err.code}]: ${err.message}\n`);
			if (process.argv.includes("--verbose") && err.cause) process.stderr.write(`cause: ${String(err.cause)}\n`);
			process.exit(err instanceof UserInputError ? 2 : 1);
		}
		process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
		process.exit(1);
	},
);
