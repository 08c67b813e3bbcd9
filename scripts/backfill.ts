/**
 * `npm run backfill -- ...`: exports a chain range from JSON-RPC into Parquet (see README).
 * SIGTERM/SIGINT stop it cleanly after the chunk being written (exit 143/130); a second one exits at once.
 * Failures go through the one error path of the CLIs (src/util/cli.ts).
 */
import { createBackfill, InterruptedError } from "../src/backfill/backfill.js";
import { BACKFILL_USAGE, parseBackfillOptions } from "../src/backfill/options.js";
import { createRpcClient } from "../src/rpc/client.js";
import { runCli } from "../src/util/cli.js";
import { createLogger } from "../src/util/logger.js";
import { onStopSignal, SIGNAL_EXIT_CODE, type StopSignal } from "../src/util/stop-signals.js";

let dataDir = "data";

runCli({ usage: BACKFILL_USAGE, dataDir: () => dataDir }, async (argv) => {
	const opts = parseBackfillOptions(argv);
	const logger = createLogger({ verbose: opts.verbose, dataDir: opts.dataDir });
	dataDir = opts.dataDir;
	const stop = new AbortController();
	onStopSignal((signal) => stop.abort(signal), logger.warn);
	const rpc = createRpcClient({ urls: opts.rpcUrls, batchSize: opts.batchSize, logger });
	const backfill = createBackfill({ rpc, chain: opts.chain, dataDir: opts.dataDir, logger });
	let s: Awaited<ReturnType<typeof backfill.run>>;
	try {
		s = await backfill.run({ ...opts, signal: stop.signal });
	} catch (err) {
		// Stopped by a signal: not a failure to explain, the status says which signal.
		if (!(err instanceof InterruptedError)) throw err;
		process.stderr.write(`${err.message}\n`);
		return SIGNAL_EXIT_CODE[err.reason as StopSignal] ?? 1;
	}
	const rows = Object.entries(s.rows)
		.map(([d, n]) => `${d}=${n}`)
		.join(" ");
	logger.info(
		`done: ${opts.chain.id} blocks ${s.from}..${s.to}: ${s.blocks} fetched in ${s.chunks} chunks in ${s.seconds.toFixed(1)}s ` +
			`(${(s.blocks / s.seconds).toFixed(1)} blocks/s); rows ${rows}; files under ${opts.dataDir}/${opts.chain.id}`,
	);
	return 0;
});
