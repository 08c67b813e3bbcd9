/**
 * `npm start`: the whole service on one machine with no configuration.
 * - Default: starts a local anvil chain (chain id 31337), deploys the workload contracts, keeps
 *   generating mixed activity (native, ERC-20/721/1155, internal transfers, CREATE/CREATE2,
 *   reverts), backfills it into data/demo/, follows the head and serves the API on :8080.
 *   data/demo/ (or CHAINLAKE_DEMO_DIR) is a fresh demo chain each start, so it is emptied first,
 *   but never under a live writer: the demo holds the folder's write lock while it runs, and a
 *   second start on the same folder (or one whose chain folder a follow/backfill writes) is refused
 *   with one line naming that process, before anything is deleted (store/files/clear-folder.ts).
 * - With CHAINLAKE_RPC_URL set: follows that chain instead (from CHAINLAKE_START_BLOCK, default
 *   the head minus 100) into CHAINLAKE_DATA_DIR (default data/), and serves it.
 * Prints the base URL, a demo API key, the docs URL, the anvil RPC URL and data folder, and curl
 * commands that return data. Logs one summary line a minute (--verbose or CHAINLAKE_VERBOSE=1:
 * every stored block). CHAINLAKE_SQL=1 turns on the SQL endpoint (README "SQL over HTTP").
 * Ctrl-C stops everything: the activity, then the follower, the API, and anvil last.
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { buildApp } from "../src/api/app.js";
import { createKeyring } from "../src/api/keys.js";
import { keysPath } from "../src/api/keys-path.js";
import { parseRateLimit } from "../src/api/rate-limit.js";
import { createBackfill } from "../src/backfill/backfill.js";
import { startFollowers } from "../src/follow/followers.js";
import { createStore } from "../src/query/store/create-store.js";
import { ethBlockNumber, ethChainId } from "../src/rpc/actions.js";
import { createRpcClient } from "../src/rpc/client.js";
import { claimAndClearFolder } from "../src/store/files/clear-folder.js";
import { acquireWriteLock, DataDirLockedError } from "../src/store/files/lock.js";
import { chainDir } from "../src/store/format/layout.js";
import { parseChainId } from "../src/util/chain.js";
import { demoDir, runCli, usageError } from "../src/util/cli.js";
import { ChainlakeError } from "../src/util/errors.js";
import { createLogger } from "../src/util/logger.js";
import { checkPortFree } from "../src/util/port-free.js";
import { onStopSignal } from "../src/util/stop-signals.js";
import { generateActivity } from "../src/workload/activity.js";
import { type AnvilInstance, startAnvil } from "../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../src/workload/run.js";

const USAGE = `usage: npm start [-- --verbose]
  A local anvil chain with activity, backfilled into data/demo, followed, and served on :8080.
  --verbose              log every stored block (default: one summary line a minute)
env:
  PORT (8080), HOST (127.0.0.1)
  CHAINLAKE_DEMO_DIR     the demo's folder (data/demo), emptied at each start; one demo per folder
  CHAINLAKE_DEMO_INTERVAL_MS  milliseconds between demo blocks (2000)
  CHAINLAKE_VERBOSE=1    as --verbose
  CHAINLAKE_DEMO_DELTA=1 write the Delta Lake logs in the demo folder too (off in the demo)
  CHAINLAKE_SQL=1        turn on POST /{chain}/v1/sql
  CHAINLAKE_RPC_URL      follow that node instead of a demo chain, into CHAINLAKE_DATA_DIR (data),
                         from CHAINLAKE_START_BLOCK (the head minus 100)`;

const PORT = Number(process.env.PORT ?? 8080);
const HOST = process.env.HOST ?? "127.0.0.1";
/** Milliseconds between demo blocks: a steady, watchable rate. */
const ACTIVITY_INTERVAL_MS = Number(process.env.CHAINLAKE_DEMO_INTERVAL_MS ?? 2000);
/** The follower's log: one line a minute unless asked for every block. */
const SUMMARY_MS = Number(process.env.CHAINLAKE_SUMMARY_MS ?? 60_000);
/** How long Ctrl-C waits for the follower's step under way (the whole stop stays under 2 s). */
const FOLLOW_STOP_MS = 1500;
/** How long the demo keeps files its follower replaced (compactions) for API requests on them. */
const DEMO_DELETE_GRACE_MS = 30_000;
/**
 * The demo writes no Delta Lake logs (CHAINLAKE_DEMO_DELTA=1 to write them): at a block every
 * 2 s they were more files than the Parquet (a commit per table per block), and their retention
 * (6 hours) kept every file the follower replaced on disk for as long.
 */
const DEMO_LAKE = { delta: process.env.CHAINLAKE_DEMO_DELTA === "1" };
const external = process.env.CHAINLAKE_RPC_URL;
let dataDir: string | undefined;

/** The refusal when another process writes the folder: who it is, and the two ways out. */
function inUse(err: DataDirLockedError, dir: string): ChainlakeError {
	const who = err.pid === null ? "another process" : `pid ${err.pid}${err.what ? ` (${err.what})` : ""}`;
	const stop = err.pid === null ? "stop it" : `stop it (Ctrl-C in its terminal, or kill ${err.pid})`;
	const fix = external
		? `or give this one its own folder: CHAINLAKE_DATA_DIR=${dir}-2 npm start`
		: `or run this demo in its own folder: CHAINLAKE_DEMO_DIR=${dir}-2 PORT=${PORT === 8080 ? 8081 : PORT} npm start`;
	return new ChainlakeError(
		"DATA_DIR_LOCKED",
		`${dir} is in use: ${who} is writing ${err.dir}; nothing was deleted. ${stop[0]?.toUpperCase()}${stop.slice(1)}, ${fix}`,
	);
}

const options = {
	verbose: { type: "boolean", default: false },
} as const;

// npm start takes its port and folder from the environment: the fixes name those variables.
const spec = {
	usage: USAGE,
	dataDir: () => dataDir,
	portFlag: "PORT=<n> npm start",
	dataDirFlag: external ? "CHAINLAKE_DATA_DIR" : "CHAINLAKE_DEMO_DIR",
};

runCli(spec, async (argv) => {
	const { values } = parseArgs({ args: argv, options });
	const verbose = values.verbose || process.env.CHAINLAKE_VERBOSE === "1";
	if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535)
		usageError(`PORT must be a port number (0-65535), got ${process.env.PORT}`);
	let anvil: AnvilInstance | undefined;
	let work: WorkloadResult | undefined;
	let rpcUrl: string;
	let startBlock: number | undefined;
	/** The demo folder's write lock, held until the end (store/files/clear-folder.ts). */
	let releaseFolder: (() => void) | undefined;
	const dir = external ? (process.env.CHAINLAKE_DATA_DIR ?? "data") : demoDir();
	dataDir = dir;
	// Files named relative to the data folder in every line (issue 27).
	const logger = createLogger({ verbose, dataDir: dir });

	if (external) {
		rpcUrl = external;
		const rpc = createRpcClient({ urls: [rpcUrl], logger });
		const head = await ethBlockNumber(rpc);
		startBlock = Number(process.env.CHAINLAKE_START_BLOCK ?? Math.max(0, head - 100));
	} else {
		try {
			// A taken port said before the demo chain is built (about 20 s), and before the folder is
			// wiped: it may be what a `serve` on that port reads. After the folder's locks, so that a
			// second demo on the same folder is told that, not that its port is taken.
			releaseFolder = await claimAndClearFolder(dir, () => checkPortFree(PORT, HOST));
		} catch (err) {
			throw err instanceof DataDirLockedError ? inUse(err, dir) : err;
		}
		logger.info("starting a local anvil chain and the demo workload…");
		// Stopped by shutdown() below after the follower, not at the signal (anvil.ts keepOnSignal).
		anvil = await startAnvil({ chainId: 31337, keepOnSignal: true });
		rpcUrl = anvil.url;
		work = await runWorkload({ rpcUrl });
		await generateActivity({ rpcUrl, contracts: work.contracts, blocks: 5, txsPerBlock: 12 });
	}

	const rpc = createRpcClient({ urls: [rpcUrl], logger });
	const chain = parseChainId(`eip155-${await ethChainId(rpc)}`);
	if (external) {
		// The follower would stand by behind another writer; npm start says so and stops instead.
		try {
			(await acquireWriteLock(chainDir(dir, chain.id)))();
		} catch (err) {
			throw err instanceof DataDirLockedError ? inUse(err, dir) : err;
		}
		await checkPortFree(PORT, HOST);
	} else {
		const s = await createBackfill({ rpc, chain, dataDir: dir, logger }).run({
			from: 0,
			to: "latest",
			traces: "auto",
			lake: DEMO_LAKE,
		});
		logger.info(`backfilled ${s.blocks} blocks of ${chain.id}`);
	}

	// Keep the demo chain busy: one block of mixed activity every ACTIVITY_INTERVAL_MS.
	let stopping = false;
	let wakeActivity = () => {};
	const activity = (async () => {
		if (!work) return;
		for (let i = 0; !stopping; i++) {
			await new Promise<void>((r) => {
				const t = setTimeout(r, ACTIVITY_INTERVAL_MS);
				wakeActivity = () => {
					clearTimeout(t);
					r();
				};
			});
			if (stopping) break;
			try {
				await generateActivity({
					rpcUrl,
					contracts: work.contracts,
					blocks: 1,
					txsPerBlock: 12,
					seed: false,
					startIndex: 1000 + i * 12,
				});
			} catch (err) {
				if (!stopping) logger.warn(`demo activity: ${(err as Error).message}`);
			}
		}
	})();

	const demoKey = process.env.CHAINLAKE_API_KEYS?.split(",")[0] ?? `demo-${randomBytes(12).toString("hex")}`;
	// Before anything starts: a damaged key file stops the start with a message naming it.
	const keyring = createKeyring({ path: keysPath(dir), envKeys: [demoKey] });
	const follow = startFollowers([{ chain: chain.id, urls: [rpcUrl] }], {
		dataDir: dir,
		logger,
		startBlock,
		pollMs: 500,
		// The demo chain: replaced head files go after 30 s, not 5 minutes (the shortest grace the
		// API's snapshots allow, query/store/store-options.ts SNAPSHOT_MAX_AGE_MS), merged in
		// windows of 4, 16, 64 and 256 blocks, no Delta logs: its folder stays close to what a
		// backfill writes.
		...(anvil ? { deleteGraceMs: DEMO_DELETE_GRACE_MS, compactFanIn: 4, lake: DEMO_LAKE } : {}),
		summaryMs: verbose ? undefined : SUMMARY_MS,
	});
	const store = await createStore(dir);
	const app = await buildApp({
		store,
		keyring,
		dataDir: dir,
		followers: follow.sources,
		// The same per-key limit as `npm run serve` (CHAINLAKE_RATE_LIMIT / CHAINLAKE_RATE_BURST to change it).
		rateLimit: parseRateLimit(process.env.CHAINLAKE_RATE_LIMIT, process.env.CHAINLAKE_RATE_BURST),
		logger: { level: process.env.LOG_LEVEL ?? "warn", redact: ["req.headers.authorization"] },
		// POST /{chain}/v1/sql for notebooks, when asked for (README "SQL over HTTP").
		sql: { enabled: process.env.CHAINLAKE_SQL === "1" },
		metricsPublic: process.env.CHAINLAKE_METRICS_PUBLIC === "1",
	});
	const address = await app.listen({ port: PORT, host: HOST });
	const base = `${address}/${chain.id}/v1`;
	const who = work?.accounts.alice ?? "0x0000000000000000000000000000000000000000";
	const curls = [
		`curl -s -H "Authorization: Bearer ${demoKey}" "${base}/blocks/latest"`,
		`curl -s -H "Authorization: Bearer ${demoKey}" "${base}/address/${who}/transfers?asset_type=native,ft,nft&limit=5"`,
		work
			? `curl -s -H "Authorization: Bearer ${demoKey}" "${base}/contracts/creates?caller=${work.contracts.factory}&limit=5"`
			: `curl -s -H "Authorization: Bearer ${demoKey}" "${base}/blocks?block_number_start=-5&block_number_end=latest"`,
		...(process.env.CHAINLAKE_SQL === "1"
			? [
					`curl -s -H "Authorization: Bearer ${demoKey}" -H "content-type: text/plain" --data "SELECT token_standard, count(*) AS n FROM transfers GROUP BY ALL" "${base}/sql"`,
				]
			: []),
	];
	process.stdout.write(
		[
			"",
			`chainlake is serving ${chain.id}${anvil ? " (a local anvil demo chain)" : ""}`,
			`  base URL:  ${base}`,
			`  API key:   ${demoKey}`,
			`  docs:      ${address}/docs`,
			`  health:    ${address}/readyz   metrics: ${address}/metrics (with the key)`,
			`  ${anvil ? "anvil RPC:" : "node RPC: "} ${rpcUrl}   (chain id ${chain.number})`,
			`  data:      ${dir}   (${chain.id} in ${chainDir(dir, chain.id)})`,
			"try:",
			...curls.map((c) => `  ${c}`),
			...(anvil
				? [
						"backfill the demo chain into a folder of your own (while this runs):",
						`  npm run backfill -- --chain ${chain.id} --rpc ${rpcUrl} --from 0 --to latest --data-dir data/mine`,
					]
				: []),
			verbose ? "" : `Logs one line a minute (--verbose or CHAINLAKE_VERBOSE=1 for every block).`,
			"Ctrl-C stops everything.",
			"",
		]
			.filter((l, i) => l !== "" || i === 0)
			.join("\n")
			.concat("\n"),
	);

	const shutdown = async () => {
		if (stopping) return;
		stopping = true;
		const started = Date.now();
		// The chain's users first, the chain last: a follower polling a stopped anvil retries for seconds.
		const took = (what: string) => logger.debug(`stop: ${what} at ${Date.now() - started} ms`);
		wakeActivity();
		await activity;
		took("activity stopped");
		// A step under way finishes first, unless it takes longer than FOLLOW_STOP_MS (a long
		// catch-up on a loaded machine): then the process ends mid-step, which is a crash to the
		// folder, and the next start cleans up after it (a demo folder is emptied anyway).
		const stopped = await Promise.race([
			follow.stop().then(() => true),
			new Promise<false>((r) => setTimeout(() => r(false), FOLLOW_STOP_MS).unref()),
		]);
		took(stopped ? "follower stopped" : "follower still mid-step: left to the next start");
		await app.close();
		store.close();
		took("API closed");
		releaseFolder?.();
		await anvil?.stop();
		took("anvil stopped");
		logger.info(`stopped in ${((Date.now() - started) / 1000).toFixed(1)} s`);
		process.exit(0);
	};
	// A second Ctrl-C (or SIGTERM) exits at once.
	onStopSignal(shutdown, logger.info);
	return undefined;
});
