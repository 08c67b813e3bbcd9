/**
 * `npm run serve -- --data-dir data --port 8080 [--follow eip155-1=<rpc url> ...]`: the HTTP API
 * over the Parquet files, optionally following chains' heads in the same process (see README).
 * `--rate-limit <n>` / `--rate-burst <n>` (CHAINLAKE_RATE_LIMIT / CHAINLAKE_RATE_BURST): requests
 * per second per API key, default 50, 0 = off, and the burst, default twice the rate;
 * `--max-response-mb <n>` (CHAINLAKE_MAX_RESPONSE_MB): the largest list answer, default 32;
 * `--query-timeout-ms <n>` (CHAINLAKE_QUERY_TIMEOUT_MS): DuckDB time one request may use before
 * it is cut with 503 QUERY_TIMEOUT, default 10000;
 * `--memory-limit <size>` (CHAINLAKE_MEMORY_LIMIT): DuckDB's memory for this process, default 2GB
 * (several API processes on one machine: give each its share); `--threads <n>` (CHAINLAKE_THREADS):
 * DuckDB's threads, default 2 (the same).
 * `--follow` on several processes over one folder: one writes, the others stand by (README "Scaling out").
 * `--data-url s3://bucket/prefix` (CHAINLAKE_DATA_URL): read a lake a writer publishes to a bucket
 * instead of a folder, keeping the files queries touch in `--cache-dir` (default .chainlake-cache)
 * up to `--cache-size` (default 10GB), the manifests fetched every `--poll-ms`; `--s3-endpoint`
 * (or AWS_ENDPOINT_URL) for an S3-compatible server. `--publish-to s3://bucket/prefix` with
 * --follow: publish the followed chains there (README "The lake on object storage").
 * `--sql` (CHAINLAKE_SQL=1): turn on POST /{chain}/v1/sql, with `--sql-timeout-ms` (default the
 * query budget), `--sql-memory` (512MB per statement), `--sql-max-rows` (100000),
 * `--sql-max-length` (16384 characters) and `--sql-concurrency` (1) (README "SQL over HTTP").
 * Deadlines for slow clients are buildApp's defaults (src/api/server-timeouts.ts).
 */
import { parseArgs } from "node:util";
import { buildApp } from "../src/api/app.js";
import { createKeyring } from "../src/api/keys.js";
import { keysPath } from "../src/api/keys-path.js";
import { parseRateLimit, type RateLimitOptions } from "../src/api/rate-limit.js";
import { SQL_FLAG_OPTIONS, sqlFlags } from "../src/api/sql-flags.js";
import { parseFollowSpec, startFollowers } from "../src/follow/followers.js";
import { createStore, DEFAULT_MEMORY_LIMIT, DEFAULT_QUERY_TIMEOUT_MS, parseMemoryLimit } from "../src/query/store.js";
import { openBucket, parseBucketUrl } from "../src/remote/bucket.js";
import { parseCacheSize } from "../src/remote/file-cache.js";
import { startPublishing } from "../src/remote/publisher.js";
import { openRemoteLake } from "../src/remote/remote-lake.js";
import { LAKE_FLAG_OPTIONS, lakeFlags } from "../src/store/delta/lake-flags.js";
import { createLogger } from "../src/util/logger.js";
import { onStopSignal } from "../src/util/stop-signals.js";

const options = {
	"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR ?? "data" },
	port: { type: "string", default: process.env.PORT ?? "8080" },
	host: { type: "string", default: process.env.HOST ?? "127.0.0.1" },
	"base-path": { type: "string", default: process.env.CHAINLAKE_BASE_PATH ?? "" },
	"keys-file": { type: "string" },
	follow: { type: "string", multiple: true },
	"finality-depth": { type: "string", default: "12" },
	"poll-ms": { type: "string", default: "1000" },
	// Requests per second per API key (0 = no limit) and the burst a key may send at once.
	"rate-limit": { type: "string", default: process.env.CHAINLAKE_RATE_LIMIT ?? "" },
	"rate-burst": { type: "string", default: process.env.CHAINLAKE_RATE_BURST ?? "" },
	"max-response-mb": { type: "string", default: process.env.CHAINLAKE_MAX_RESPONSE_MB || "32" },
	"query-timeout-ms": {
		type: "string",
		default: process.env.CHAINLAKE_QUERY_TIMEOUT_MS || String(DEFAULT_QUERY_TIMEOUT_MS),
	},
	"memory-limit": { type: "string", default: process.env.CHAINLAKE_MEMORY_LIMIT || DEFAULT_MEMORY_LIMIT },
	threads: { type: "string", default: process.env.CHAINLAKE_THREADS || "2" },
	"data-url": { type: "string", default: process.env.CHAINLAKE_DATA_URL ?? "" },
	"cache-dir": { type: "string", default: ".chainlake-cache" },
	"cache-size": { type: "string", default: "10GB" },
	"s3-endpoint": { type: "string", default: "" },
	"publish-to": { type: "string", default: "" },
	// With --follow: the Delta Lake export's settings (README "Reading the lake from other engines").
	...LAKE_FLAG_OPTIONS,
	// POST /{chain}/v1/sql: off unless --sql or CHAINLAKE_SQL=1 (README "SQL over HTTP").
	...SQL_FLAG_OPTIONS,
} as const;
let values: ReturnType<typeof parseArgs<{ options: typeof options }>>["values"];
try {
	({ values } = parseArgs({ options }));
} catch (err) {
	// An unknown flag, or a value that looks like a flag (--rate-limit -1: write --rate-limit=-1).
	process.stderr.write(`${(err as Error).message}\n`);
	process.exit(2);
}
const dataUrl = values["data-url"] as string;
// Over a bucket, the local folder the store reads is the cache.
const dataDir = dataUrl ? (values["cache-dir"] as string) : (values["data-dir"] as string);
const fail = (message: string): never => {
	process.stderr.write(`${message}\n`);
	process.exit(2);
};
if (dataUrl && values.follow?.length)
	fail("--data-url reads a lake another process writes: start the writer with npm run follow -- --publish-to <url>");
if (values["publish-to"] && !values.follow?.length)
	fail("--publish-to publishes the chains this process follows: add --follow");
const cacheBytes =
	parseCacheSize(values["cache-size"] as string) ??
	fail(`--cache-size must be a size such as 512MB or 20GB, got ${values["cache-size"]}`);
try {
	for (const url of [dataUrl, values["publish-to"] as string]) if (url) parseBucketUrl(url);
} catch (err) {
	fail((err as Error).message);
}
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
	process.stderr.write(`--port must be a port number (0-65535), got ${values.port}\n`);
	process.exit(2);
}
let rateLimit: RateLimitOptions;
try {
	rateLimit = parseRateLimit(values["rate-limit"], values["rate-burst"]);
} catch (err) {
	process.stderr.write(`${(err as Error).message}\n`);
	process.exit(2);
}
const maxResponseMb = Number(values["max-response-mb"]);
if (!Number.isFinite(maxResponseMb) || maxResponseMb <= 0) {
	process.stderr.write(`--max-response-mb must be a size in MiB above 0, got ${values["max-response-mb"]}\n`);
	process.exit(2);
}
const queryTimeoutMs = Number(values["query-timeout-ms"]);
if (!Number.isInteger(queryTimeoutMs) || queryTimeoutMs < 1 || queryTimeoutMs > 2 ** 31 - 1) {
	process.stderr.write(
		`--query-timeout-ms must be a whole number of milliseconds from 1 to ${2 ** 31 - 1}, got ${values["query-timeout-ms"]}\n`,
	);
	process.exit(2);
}
const memoryLimit = parseMemoryLimit(values["memory-limit"] as string);
if (memoryLimit === null) {
	process.stderr.write(`--memory-limit must be a size such as 512MB or 2GB, got ${values["memory-limit"]}\n`);
	process.exit(2);
}
const threads = Number(values.threads);
if (!Number.isInteger(threads) || threads < 1 || threads > 256) {
	process.stderr.write(`--threads must be a whole number from 1 to 256, got ${values.threads}\n`);
	process.exit(2);
}
let sql: ReturnType<typeof sqlFlags>;
try {
	sql = sqlFlags(values, { timeoutMs: queryTimeoutMs, maxBytes: Math.round(maxResponseMb * 1024 * 1024), threads });
	if (sql.enabled && dataUrl) throw new Error("--sql needs the lake's folder: it cannot be on with --data-url");
} catch (err) {
	process.stderr.write(`${(err as Error).message}\n`);
	process.exit(2);
}
const logger = createLogger({});
let keyring: ReturnType<typeof createKeyring>;
try {
	// Before anything starts: a damaged key file or a bad CHAINLAKE_API_KEYS entry stops the start.
	keyring = createKeyring({
		path: keysPath(dataDir, values["keys-file"]),
		envKeys: process.env.CHAINLAKE_API_KEYS?.split(",").map((k) => k.trim()),
		log: logger,
	});
} catch (err) {
	process.stderr.write(`${(err as Error).message}\n`);
	process.exit(2);
}
let follow: ReturnType<typeof startFollowers> | undefined;
try {
	follow = startFollowers((values.follow ?? []).map(parseFollowSpec), {
		dataDir,
		logger,
		finalityDepth: Number(values["finality-depth"]),
		pollMs: Number(values["poll-ms"]),
		lake: lakeFlags(values),
	});
} catch (err) {
	process.stderr.write(`${(err as Error).message}\n`);
	process.exit(2);
}
const endpoint = (values["s3-endpoint"] as string) || undefined;
const remote = dataUrl
	? await openRemoteLake({
			url: dataUrl,
			cacheDir: dataDir,
			cacheBytes,
			pollMs: Number(values["poll-ms"]),
			endpoint,
			logger,
		})
	: undefined;
const publishing = values["publish-to"]
	? startPublishing(
			openBucket(values["publish-to"] as string, { endpoint }),
			dataDir,
			(values.follow ?? []).map((f) => parseFollowSpec(f).chain),
			{
				intervalMs: Number(values["poll-ms"]),
				logger,
				writes: (chain) => follow?.sources.get(chain)?.stats.standby == null,
			},
		)
	: undefined;
const store = await createStore(dataDir, { queryTimeoutMs, memoryLimit, threads, files: remote?.files });
const app = await buildApp({
	store,
	keyring,
	dataDir,
	basePath: values["base-path"],
	followers: follow.sources,
	remote,
	logger: { level: process.env.LOG_LEVEL ?? "info", redact: ["req.headers.authorization"] },
	rateLimit,
	maxResponseBytes: Math.round(maxResponseMb * 1024 * 1024),
	sql,
});
const address = await app.listen({ port, host: values.host });
app.log.info(
	`chainlake API on ${address}${values["base-path"]}: chains ${store.chains().join(", ") || "none yet"}; docs at ${address}/docs`,
);
app.log.info(
	rateLimit.perSecond > 0
		? `rate limit per API key: ${rateLimit.perSecond}/s, bursts of ${rateLimit.burst}`
		: "rate limit: off (--rate-limit 0)",
);
if (keyring.count() === 0)
	app.log.warn("no API keys yet: create one with npm run keys -- create, or set CHAINLAKE_API_KEYS");

// SIGTERM/SIGINT: followers stop, requests under way are answered, then exit 0; a second signal exits at once.
onStopSignal(
	async () => {
		await follow?.stop();
		await publishing?.stop();
		await app.close();
		await remote?.stop();
		store.close();
		process.exit(0);
	},
	(line) => app.log.info(line),
);
