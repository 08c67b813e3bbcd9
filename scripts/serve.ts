/**
 * `npm run serve`: the HTTP API over the Parquet files, optionally following chains' heads in the
 * same process (see README); USAGE below lists every flag. `--follow` on several processes over
 * one folder: one writes, the others stand by (README "Scaling out"); `--data-url` reads a lake a
 * writer publishes to a bucket (README "The lake on object storage"); `--sql` turns on the SQL
 * endpoint (README "SQL over HTTP"). Deadlines for slow clients are buildApp's defaults
 * (src/api/server-timeouts.ts). Failures go through the CLIs' one error path (src/util/cli.ts).
 */
import { parseArgs } from "node:util";
import { buildApp } from "../src/api/app.js";
import { startHookDelivery } from "../src/api/hooks/hook-delivery.js";
import { HOOK_FLAG_OPTIONS, HOOK_USAGE, hookFlags } from "../src/api/hooks/hook-flags.js";
import { DEFAULT_DELIVERY } from "../src/api/hooks/hook-worker.js";
import { createKeyring } from "../src/api/keys.js";
import { keysPath } from "../src/api/keys-path.js";
import { parseRateLimit } from "../src/api/rate-limit.js";
import { SQL_FLAG_OPTIONS, sqlFlags } from "../src/api/sql-flags.js";
import { checkFollowChains, parseFollowSpec, startFollowers } from "../src/follow/followers.js";
import { createStore } from "../src/query/store/create-store.js";
import {
	DEFAULT_MEMORY_LIMIT,
	DEFAULT_QUERY_TIMEOUT_MS,
	DEFAULT_THREADS,
	parseMemoryLimit,
} from "../src/query/store/store-options.js";
import { openBucket, parseBucketUrl } from "../src/remote/bucket.js";
import { parseCacheSize } from "../src/remote/file-cache.js";
import { startPublishing } from "../src/remote/publisher.js";
import { openRemoteLake } from "../src/remote/remote-lake.js";
import { LAKE_FLAG_OPTIONS, LAKE_USAGE, lakeFlags } from "../src/store/delta/lake-flags.js";
import { ensureWritableFolder, readFolder, startCli, usageError, userInput } from "../src/util/cli.js";
import { createLogger } from "../src/util/logger.js";
import { checkPortFree } from "../src/util/port-free.js";
import { onStopSignal } from "../src/util/stop-signals.js";

const USAGE = `usage: npm run serve -- [--data-dir data] [--port 8080] [--follow eip155-<n>=<rpc url> ...] [flags]
  --data-dir <dir>          the lake's folder (CHAINLAKE_DATA_DIR; default data, or the demo's
                            data/demo when data/ holds no chain and --follow is not given)
  --port <n>                the port (PORT; default 8080; 0 picks a free one)
  --host <addr>             the address to listen on (HOST; default 127.0.0.1)
  --base-path <path>        a prefix for every route, behind a proxy (CHAINLAKE_BASE_PATH)
  --keys-file <file>        the API keys (CHAINLAKE_KEYS_FILE; default <data-dir>/_keys.json);
                            CHAINLAKE_API_KEYS adds keys, comma-separated
  --follow <chain>=<url>    follow a chain's head in this process (repeatable; several URLs comma-separated)
  --finality-depth <n>      with --follow: blocks below the head taken as final (default 12)
  --poll-ms <n>             with --follow: ms between polls of the node, and of a bucket (default 1000)
  --rate-limit <n>          requests per second per API key, 0 = off (CHAINLAKE_RATE_LIMIT; default 50)
  --rate-burst <n>          requests a key may send at once (CHAINLAKE_RATE_BURST; default 2 x rate)
  --max-response-mb <n>     the largest list answer in MiB (CHAINLAKE_MAX_RESPONSE_MB; default 32)
  --metrics-public          /metrics without an API key (CHAINLAKE_METRICS_PUBLIC=1; default: a key is
                            needed), for a port only Prometheus reaches
  --query-timeout-ms <n>    DuckDB time per request before 503 QUERY_TIMEOUT (CHAINLAKE_QUERY_TIMEOUT_MS; default ${DEFAULT_QUERY_TIMEOUT_MS})
  --memory-limit <size>     DuckDB's memory for this process (CHAINLAKE_MEMORY_LIMIT; default ${DEFAULT_MEMORY_LIMIT})
  --threads <n>             DuckDB's threads a query (CHAINLAKE_THREADS; default ${DEFAULT_THREADS})
  --data-url s3://b/prefix  read a lake published to a bucket instead of a folder (CHAINLAKE_DATA_URL)
  --cache-dir <dir>         with --data-url: where fetched files are kept (default .chainlake-cache)
  --cache-size <size>       with --data-url: the cache's size (default 10GB)
  --s3-endpoint <url>       an S3-compatible server (AWS_ENDPOINT_URL)
  --publish-to s3://b/p     with --follow: publish the followed chains to a bucket
  ${LAKE_USAGE}
                            with --follow: the Delta Lake export (README "Reading the lake from other engines")
  ${HOOK_USAGE}
  --stream-poll-ms <n>      how often streams look for new blocks in the lake, in ms (CHAINLAKE_STREAM_POLL_MS; default 250)
  --stream-heartbeat-ms <n> a stream's head event at least this often, in ms (default 15000)
  --max-streams <n>         open streams in this process (CHAINLAKE_MAX_STREAMS; default 1000)
  --max-streams-per-key <n> open streams of one API key (CHAINLAKE_MAX_STREAMS_PER_KEY; default 20)
  --stream-buffer-kb <n>    unread KiB a stream's reader may hold 30 s before it is dropped (default 1024)
  --sql                     turn on POST /{chain}/v1/sql (CHAINLAKE_SQL=1), with
  --sql-timeout-ms <n>      a statement's time (CHAINLAKE_SQL_TIMEOUT_MS; default the query budget)
  --sql-memory <size>       a statement's memory (CHAINLAKE_SQL_MEMORY; default 512MB)
  --sql-max-rows <n>        rows per answer (CHAINLAKE_SQL_MAX_ROWS; default 100000)
  --sql-max-length <n>      characters per statement (CHAINLAKE_SQL_MAX_LENGTH; default 16384)
  --sql-concurrency <n>     statements at once, a process each (CHAINLAKE_SQL_CONCURRENCY; default 2)
  --sql-key-concurrency <n> statements one key may run at once (CHAINLAKE_SQL_KEY_CONCURRENCY;
                            default half of --sql-concurrency, at least 1)`;

const argv = startCli({ usage: USAGE, dataDir: () => dataDir });
const options = {
	// No default here: readFolder tells "not given" from "given" (the demo folder fallback).
	"data-dir": { type: "string" },
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
	"metrics-public": { type: "boolean", default: process.env.CHAINLAKE_METRICS_PUBLIC === "1" },
	"query-timeout-ms": {
		type: "string",
		default: process.env.CHAINLAKE_QUERY_TIMEOUT_MS || String(DEFAULT_QUERY_TIMEOUT_MS),
	},
	"memory-limit": { type: "string", default: process.env.CHAINLAKE_MEMORY_LIMIT || DEFAULT_MEMORY_LIMIT },
	threads: { type: "string", default: process.env.CHAINLAKE_THREADS || String(DEFAULT_THREADS) },
	"data-url": { type: "string", default: process.env.CHAINLAKE_DATA_URL ?? "" },
	"cache-dir": { type: "string", default: ".chainlake-cache" },
	"cache-size": { type: "string", default: "10GB" },
	"s3-endpoint": { type: "string", default: "" },
	"publish-to": { type: "string", default: "" },
	// Streams (README "Live streams").
	"stream-poll-ms": { type: "string", default: process.env.CHAINLAKE_STREAM_POLL_MS || "250" },
	"stream-heartbeat-ms": { type: "string", default: "15000" },
	"max-streams": { type: "string", default: process.env.CHAINLAKE_MAX_STREAMS || "1000" },
	"max-streams-per-key": { type: "string", default: process.env.CHAINLAKE_MAX_STREAMS_PER_KEY || "20" },
	"stream-buffer-kb": { type: "string", default: "1024" },
	// With --follow: the Delta Lake export's settings (README "Reading the lake from other engines").
	...LAKE_FLAG_OPTIONS,
	// POST /{chain}/v1/sql: off unless --sql or CHAINLAKE_SQL=1 (README "SQL over HTTP").
	...SQL_FLAG_OPTIONS,
	// Webhooks: where deliveries may go, their deadline and backoff (README "Webhooks").
	...HOOK_FLAG_OPTIONS,
} as const;
// An unknown flag, or a value that looks like a flag (--rate-limit -1: write --rate-limit=-1): exit 2 with the usage.
const { values } = parseArgs({ args: argv, options });
const dataUrl = values["data-url"] as string;
// Over a bucket, the local folder the store reads is the cache; a writer (--follow) never reads
// the demo's folder in place of data/ (readFolder says why).
const dataDir = dataUrl
	? (values["cache-dir"] as string)
	: values.follow?.length
		? (values["data-dir"] ?? process.env.CHAINLAKE_DATA_DIR ?? "data")
		: readFolder(values["data-dir"], createLogger({}).info);
// Files named relative to the data folder in every line (issue 27).
const logger = createLogger({ dataDir });
if (dataUrl && values.follow?.length)
	usageError(
		"--data-url reads a lake another process writes: start the writer with npm run follow -- --publish-to <url>",
	);
if (values["publish-to"] && !values.follow?.length)
	usageError("--publish-to publishes the chains this process follows: add --follow");
const cacheBytes =
	parseCacheSize(values["cache-size"] as string) ??
	usageError(`--cache-size must be a size such as 512MB or 20GB, got ${values["cache-size"]}`);
userInput(() => {
	for (const url of [dataUrl, values["publish-to"] as string]) if (url) parseBucketUrl(url);
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535)
	usageError(`--port must be a port number (0-65535), got ${values.port}`);
const rateLimit = userInput(() => parseRateLimit(values["rate-limit"], values["rate-burst"]));
const maxResponseMb = Number(values["max-response-mb"]);
if (!Number.isFinite(maxResponseMb) || maxResponseMb <= 0)
	usageError(`--max-response-mb must be a size in MiB above 0, got ${values["max-response-mb"]}`);
const queryTimeoutMs = Number(values["query-timeout-ms"]);
if (!Number.isInteger(queryTimeoutMs) || queryTimeoutMs < 1 || queryTimeoutMs > 2 ** 31 - 1)
	usageError(
		`--query-timeout-ms must be a whole number of milliseconds from 1 to ${2 ** 31 - 1}, got ${values["query-timeout-ms"]}`,
	);
const memoryLimit =
	parseMemoryLimit(values["memory-limit"] as string) ??
	usageError(`--memory-limit must be a size such as 512MB or 2GB, got ${values["memory-limit"]}`);
const threads = Number(values.threads);
if (!Number.isInteger(threads) || threads < 1 || threads > 256)
	usageError(`--threads must be a whole number from 1 to 256, got ${values.threads}`);
/** A whole-number flag from `min` to `max`, or the usage error naming it. */
const wholeFlag = (flag: string, min: number, max: number): number => {
	const text = String(values[flag as keyof typeof values]);
	const n = Number(text);
	if (!/^\d{1,10}$/.test(text) || n < min || n > max)
		usageError(`--${flag} must be a whole number from ${min} to ${max}, got ${text}`);
	return n;
};
const live = {
	pollMs: wholeFlag("stream-poll-ms", 10, 60_000),
	heartbeatMs: wholeFlag("stream-heartbeat-ms", 100, 15_000),
	maxStreams: wholeFlag("max-streams", 0, 1_000_000),
	maxStreamsPerKey: wholeFlag("max-streams-per-key", 0, 1_000_000),
	bufferBytes: wholeFlag("stream-buffer-kb", 16, 1_048_576) * 1024,
};
const sql = userInput(() => {
	const flags = sqlFlags(values, {
		timeoutMs: queryTimeoutMs,
		maxBytes: Math.round(maxResponseMb * 1024 * 1024),
		threads,
	});
	if (flags.enabled && dataUrl) throw new Error("--sql needs the lake's folder: it cannot be on with --data-url");
	return flags;
});
const hooks = userInput(() => hookFlags(values));
// Before anything starts: a damaged key file or a bad CHAINLAKE_API_KEYS entry stops the start (exit 2).
const keyring = userInput(() =>
	createKeyring({
		path: keysPath(dataDir, values["keys-file"]),
		envKeys: process.env.CHAINLAKE_API_KEYS?.split(",").map((k) => k.trim()),
		log: logger,
	}),
);
// A taken port said before a follower starts writing, not once everything has started.
await checkPortFree(port, values.host as string);
// A follower meets an unwritable folder only inside its retry loop: say so now instead.
if (values.follow?.length) ensureWritableFolder(dataDir);
const followSpecs = userInput(() => (values.follow ?? []).map(parseFollowSpec));
// Each followed node's chain id before anything is written: a node of another chain is refused in one line.
await checkFollowChains(followSpecs, logger);
const follow = userInput(() =>
	startFollowers(followSpecs, {
		dataDir,
		logger,
		finalityDepth: Number(values["finality-depth"]),
		pollMs: Number(values["poll-ms"]),
		lake: lakeFlags(values),
	}),
);
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
				writes: (chain) => follow.sources.get(chain)?.stats.standby == null,
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
	metricsPublic: values["metrics-public"] as boolean,
	hookPolicy: hooks.policy,
	live,
});
// Webhooks: this process delivers a chain's hooks if no other process over the folder does (hook-delivery.ts).
const delivery = startHookDelivery(app, {
	...DEFAULT_DELIVERY,
	...hooks,
	basePath: values["base-path"],
	dataDir,
	chains: () => store.chains(),
	ownerValid: (owner) => keyring.holds(owner),
	pollMs: 1000,
	log: logger,
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
// An empty folder is no error (a backfill may fill it while this serves), but the first hour needs the way on.
if (store.chains().length === 0 && !follow.sources.size && !remote)
	app.log.warn(
		`no chain data under ${dataDir} yet: write some with npm run backfill, follow a chain with --follow, or run npm start for a demo chain`,
	);
if (keyring.count() === 0)
	app.log.warn("no API keys yet: create one with npm run keys -- create, or set CHAINLAKE_API_KEYS");

// SIGTERM/SIGINT: followers stop, requests under way are answered, then exit 0; a second signal exits at once.
onStopSignal(
	async () => {
		await follow.stop();
		await delivery.stop();
		await publishing?.stop();
		await app.close();
		await remote?.stop();
		store.close();
		process.exit(0);
	},
	(line) => app.log.info(line),
);
