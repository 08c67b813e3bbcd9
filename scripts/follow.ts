/**
 * `npm run follow -- --follow eip155-1=<rpc url> [--data-dir data] [--finality-depth 12] [--poll-ms 1000]
 *  [--partition-size 1000] [--delete-grace-ms 300000] [--delta on|off] [--delta-retention-minutes 360]
 *  [--delta-final-only false|true] [--from <n>] [--verbose]`:
 * tails chains' heads into the data folder, apart from the API (which sees new blocks on its next request).
 * Each node's chain id is checked first: a node of another chain than its --follow names is
 * refused with one line (the chain it serves, the --follow to use), before anything is written.
 * --from <n>: where a chain folder with no blocks yet begins (default 0, the whole history); in a
 *   folder that holds blocks, following resumes after its last block and --from is ignored (said
 *   at start; `npm run backfill` fills earlier blocks). The first line per chain says where it starts.
 * --verbose: debug lines too.
 * --delete-grace-ms: how long replaced (compacted, reorged-out) files stay for readers still on them.
 * --delta*: the Delta Lake export (README "Reading the lake from other engines"); kept in the manifest.
 * --status-port <n> (CHAINLAKE_STATUS_PORT): /healthz, /readyz and /metrics of the followers on
 *   that port (api/status-server.ts); off by default. The API processes show the same figures
 *   from the status file each follower writes.
 * --publish-to s3://bucket/prefix (CHAINLAKE_PUBLISH_TO): publish the followed chains' files and
 *   manifests to a bucket after each step, for readers started with --data-url (remote/publisher.ts);
 *   --s3-endpoint (or AWS_ENDPOINT_URL) for an S3-compatible server.
 * SIGTERM/SIGINT stop it cleanly (the step under way finishes, the lock is released; exit 0); a
 * second one exits at once.
 */
import { parseArgs } from "node:util";
import { startStatusServer } from "../src/api/status-server.js";
import { DEFAULT_DELETE_GRACE_MS } from "../src/follow/follower-options.js";
import { checkFollowChains, parseFollowSpec, startFollowers } from "../src/follow/followers.js";
import { openBucket } from "../src/remote/bucket.js";
import { startPublishing } from "../src/remote/publisher.js";
import { LAKE_FLAG_OPTIONS, LAKE_USAGE, lakeFlags } from "../src/store/delta/lake-flags.js";
import { ensureWritableFolder, startCli, usageError, userInput } from "../src/util/cli.js";
import { createLogger } from "../src/util/logger.js";
import { onStopSignal } from "../src/util/stop-signals.js";

const USAGE = `usage: npm run follow -- --follow eip155-<n>=<rpc url> [--follow ...] [flags]
  --follow <chain>=<url>       a chain to follow and its node (repeatable; several URLs comma-separated)
  --data-dir <dir>             the lake's folder (CHAINLAKE_DATA_DIR; default data)
  --finality-depth <n>         blocks below the head taken as final (default 12)
  --poll-ms <n>                ms between polls of the node (default 1000)
  --partition-size <n>         blocks per settled chunk (default 1000)
  --delete-grace-ms <n>        how long replaced files stay for readers still on them (default ${DEFAULT_DELETE_GRACE_MS})
  --status-port <n>            serve /healthz, /readyz and /metrics on this port (CHAINLAKE_STATUS_PORT; default off)
  --publish-to s3://b/prefix   publish the chains to a bucket after each step (CHAINLAKE_PUBLISH_TO)
  --s3-endpoint <url>          an S3-compatible server (AWS_ENDPOINT_URL)
  --from <n>                   where a chain folder with no blocks yet starts (default 0); ignored once it holds blocks
  --verbose                    debug lines too
  ${LAKE_USAGE}
                               the Delta Lake export (README "Reading the lake from other engines")`;

const argv = startCli({
	usage: USAGE,
	dataDir: () => values["data-dir"],
	portFlag: "--status-port (or CHAINLAKE_STATUS_PORT)",
});
const { values } = parseArgs({
	args: argv,
	options: {
		"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR ?? "data" },
		follow: { type: "string", multiple: true },
		"finality-depth": { type: "string", default: "12" },
		"poll-ms": { type: "string", default: "1000" },
		"partition-size": { type: "string", default: "1000" },
		"delete-grace-ms": { type: "string", default: String(DEFAULT_DELETE_GRACE_MS) },
		"status-port": { type: "string", default: process.env.CHAINLAKE_STATUS_PORT ?? "" },
		"publish-to": { type: "string", default: process.env.CHAINLAKE_PUBLISH_TO ?? "" },
		"s3-endpoint": { type: "string", default: "" },
		from: { type: "string" },
		verbose: { type: "boolean", default: false },
		...LAKE_FLAG_OPTIONS,
	},
});
if (!values.follow?.length) usageError(`--follow is required\n${USAGE}`);
const statusPort = values["status-port"] ? Number(values["status-port"]) : null;
if (statusPort !== null && !(Number.isInteger(statusPort) && statusPort >= 0 && statusPort <= 65535))
	usageError(`--status-port must be a port number (0-65535), got ${values["status-port"]}`);
const from = values.from === undefined ? undefined : Number(values.from);
if (from !== undefined && !(/^\d+$/.test(values.from as string) && Number.isSafeInteger(from)))
	usageError(`--from must be a block number (0 or more), got ${values.from}`);
const logger = createLogger({ verbose: values.verbose, dataDir: values["data-dir"] as string });
// The follower meets an unwritable folder only inside its retry loop: say so now instead.
ensureWritableFolder(values["data-dir"] as string);
const follows = values.follow;
const specs = userInput(() => follows.map(parseFollowSpec));
// Each node's chain id before anything is written: a node of another chain is refused in one line.
await checkFollowChains(specs, logger);
const follow = userInput(() => {
	const lake = lakeFlags(values);
	return startFollowers(specs, {
		startBlock: from,
		dataDir: values["data-dir"] as string,
		logger,
		finalityDepth: Number(values["finality-depth"]),
		pollMs: Number(values["poll-ms"]),
		partitionSize: Number(values["partition-size"]),
		deleteGraceMs: Number(values["delete-grace-ms"]),
		lake,
	});
});
let publishing: ReturnType<typeof startPublishing> | undefined;
if (values["publish-to"]) {
	publishing = userInput(() => {
		const bucket = openBucket(values["publish-to"], { endpoint: values["s3-endpoint"] || undefined });
		return startPublishing(
			bucket,
			values["data-dir"] as string,
			follows.map((f) => parseFollowSpec(f).chain),
			{
				intervalMs: Number(values["poll-ms"]),
				logger,
				writes: (chain) => follow.sources.get(chain)?.stats.standby == null,
			},
		);
	});
}
const status =
	statusPort === null ? null : await startStatusServer(follow.sources, values["data-dir"] as string, statusPort);
if (status) logger.info(`follower status on ${status.address}/readyz and /metrics`);
onStopSignal(async () => {
	await status?.app.close();
	await follow.stop();
	await publishing?.stop();
	logger.info("stopped");
	process.exit(0);
}, logger.info);
