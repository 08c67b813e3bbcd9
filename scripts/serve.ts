/**
 * `npm run serve -- --data-dir data --port 8080 [--follow eip155-1=<rpc url> ...]`: the HTTP API
 * over the Parquet files, optionally following chains' heads in the same process (see README).
 */
import { parseArgs } from "node:util";
import { buildApp } from "../src/api/app.js";
import { createKeyring } from "../src/api/keys.js";
import { keysPath } from "../src/api/keys-path.js";
import { parseFollowSpec, startFollowers } from "../src/follow/followers.js";
import { createStore } from "../src/query/store.js";
import { createLogger } from "../src/util/logger.js";

const { values } = parseArgs({
	options: {
		"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR ?? "data" },
		port: { type: "string", default: process.env.PORT ?? "8080" },
		host: { type: "string", default: process.env.HOST ?? "127.0.0.1" },
		"base-path": { type: "string", default: process.env.CHAINLAKE_BASE_PATH ?? "" },
		"keys-file": { type: "string" },
		follow: { type: "string", multiple: true },
		"finality-depth": { type: "string", default: "12" },
		"poll-ms": { type: "string", default: "1000" },
	},
});
const dataDir = values["data-dir"] as string;
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
	process.stderr.write(`--port must be a port number (0-65535), got ${values.port}\n`);
	process.exit(2);
}
const logger = createLogger({});
let follow: ReturnType<typeof startFollowers> | undefined;
try {
	follow = startFollowers((values.follow ?? []).map(parseFollowSpec), {
		dataDir,
		logger,
		finalityDepth: Number(values["finality-depth"]),
		pollMs: Number(values["poll-ms"]),
	});
} catch (err) {
	process.stderr.write(`${(err as Error).message}\n`);
	process.exit(2);
}
const store = await createStore(dataDir);
const keyring = createKeyring({
	path: keysPath(dataDir, values["keys-file"]),
	envKeys: process.env.CHAINLAKE_API_KEYS?.split(",").map((k) => k.trim()),
});
const app = await buildApp({
	store,
	keyring,
	dataDir,
	basePath: values["base-path"],
	followers: follow.sources,
	logger: { level: process.env.LOG_LEVEL ?? "info", redact: ["req.headers.authorization"] },
});
const address = await app.listen({ port, host: values.host });
app.log.info(
	`chainlake API on ${address}${values["base-path"]}: chains ${store.chains().join(", ") || "none yet"}; docs at ${address}/docs`,
);
if (keyring.count() === 0)
	app.log.warn("no API keys yet: create one with npm run keys -- create, or set CHAINLAKE_API_KEYS");

const stop = async () => {
	await follow?.stop();
	await app.close();
	store.close();
	process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
