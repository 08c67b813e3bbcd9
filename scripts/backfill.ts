/** `npm run backfill -- ...`: exports a chain range from JSON-RPC into Parquet (see README). */
import { createBackfill } from "../src/backfill/backfill.js";
import { parseBackfillOptions } from "../src/backfill/options.js";
import { createRpcClient } from "../src/rpc/client.js";
import { ChainlakeError, UserInputError } from "../src/util/errors.js";
import { createLogger } from "../src/util/logger.js";

async function main(): Promise<number> {
	const opts = parseBackfillOptions(process.argv.slice(2));
	const logger = createLogger({ verbose: opts.verbose });
	const rpc = createRpcClient({ urls: opts.rpcUrls, batchSize: opts.batchSize, logger });
	const backfill = createBackfill({ rpc, chain: opts.chain, dataDir: opts.dataDir, logger });
	const s = await backfill.run(opts);
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
	(err: unknown) => {
		if (err instanceof ChainlakeError) {
			process.stderr.write(`error [${err.code}]: ${err.message}\n`);
			if (process.argv.includes("--verbose") && err.cause) process.stderr.write(`cause: ${String(err.cause)}\n`);
			process.exit(err instanceof UserInputError ? 2 : 1);
		}
		process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
		process.exit(1);
	},
);
