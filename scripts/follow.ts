/**
 * `npm run follow -- --follow eip155-1=<rpc url> [--data-dir data] [--finality-depth 12] [--poll-ms 1000]
 *  [--partition-size 1000] [--delete-grace-ms 30000] [--delta on|off] [--delta-retention-minutes 360]
 *  [--delta-final-only false|true]`:
 * tails chains' heads into the data folder, apart from the API (which sees new blocks on its next request).
 * --delete-grace-ms: how long replaced (compacted, reorged-out) files stay for readers still on them.
 * --delta*: the Delta Lake export (README "Reading the lake from other engines"); kept in the manifest.
 * SIGTERM/SIGINT stop it cleanly (the step under way finishes, the lock is released; exit 0); a
 * second one exits at once.
 */
import { parseArgs } from "node:util";
import { DEFAULT_DELETE_GRACE_MS } from "../src/follow/follower.js";
import { parseFollowSpec, startFollowers } from "../src/follow/followers.js";
import { LAKE_FLAG_OPTIONS, lakeFlags } from "../src/store/delta/lake-flags.js";
import { createLogger } from "../src/util/logger.js";
import { onStopSignal } from "../src/util/stop-signals.js";

const { values } = parseArgs({
	options: {
		"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR ?? "data" },
		follow: { type: "string", multiple: true },
		"finality-depth": { type: "string", default: "12" },
		"poll-ms": { type: "string", default: "1000" },
		"partition-size": { type: "string", default: "1000" },
		"delete-grace-ms": { type: "string", default: String(DEFAULT_DELETE_GRACE_MS) },
		...LAKE_FLAG_OPTIONS,
	},
});
if (!values.follow?.length) {
	process.stderr.write("usage: npm run follow -- --follow eip155-<n>=<rpc url> [--follow ...] [--data-dir data]\n");
	process.exit(2);
}
const logger = createLogger({});
let follow: ReturnType<typeof startFollowers>;
try {
	const lake = lakeFlags(values);
	follow = startFollowers(values.follow.map(parseFollowSpec), {
		dataDir: values["data-dir"] as string,
		logger,
		finalityDepth: Number(values["finality-depth"]),
		pollMs: Number(values["poll-ms"]),
		partitionSize: Number(values["partition-size"]),
		deleteGraceMs: Number(values["delete-grace-ms"]),
		lake,
	});
} catch (err) {
	process.stderr.write(`${(err as Error).message}\n`);
	process.exit(2);
}
onStopSignal(async () => {
	await follow.stop();
	logger.info("stopped");
	process.exit(0);
}, logger.info);
