/**
 * `npm start`: the whole service on one machine with no configuration.
 * - Default: starts a local anvil chain (chain id 31337), deploys the workload contracts, keeps
 *   generating mixed activity (native, ERC-20/721/1155, internal transfers, CREATE/CREATE2,
 *   reverts), backfills it into data/demo/, follows the head and serves the API on :8080.
 *   data/demo/ (or CHAINLAKE_DEMO_DIR) is a fresh demo chain each start, so it is wiped first.
 * - With CHAINLAKE_RPC_URL set: follows that chain instead (from CHAINLAKE_START_BLOCK, default
 *   the head minus 100) into CHAINLAKE_DATA_DIR (default data/), and serves it.
 * Prints the base URL, a demo API key, the docs URL and curl commands that return data.
 * CHAINLAKE_SQL=1 turns on the SQL endpoint (README "SQL over HTTP").
 * Ctrl-C stops everything (anvil included).
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { buildApp } from "../src/api/app.js";
import { createKeyring } from "../src/api/keys.js";
import { keysPath } from "../src/api/keys-path.js";
import { parseRateLimit } from "../src/api/rate-limit.js";
import { createBackfill } from "../src/backfill/backfill.js";
import { startFollowers } from "../src/follow/followers.js";
import { createStore } from "../src/query/store.js";
import { ethBlockNumber, ethChainId } from "../src/rpc/actions.js";
import { createRpcClient } from "../src/rpc/client.js";
import { parseChainId } from "../src/util/chain.js";
import { createLogger } from "../src/util/logger.js";
import { onStopSignal } from "../src/util/stop-signals.js";
import { generateActivity } from "../src/workload/activity.js";
import { type AnvilInstance, startAnvil } from "../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../src/workload/run.js";

const PORT = Number(process.env.PORT ?? 8080);
const HOST = process.env.HOST ?? "127.0.0.1";
/** Seconds between demo blocks: a steady, watchable rate. */
const ACTIVITY_INTERVAL_MS = Number(process.env.CHAINLAKE_DEMO_INTERVAL_MS ?? 2000);
const logger = createLogger({});
const external = process.env.CHAINLAKE_RPC_URL;

let anvil: AnvilInstance | undefined;
let work: WorkloadResult | undefined;
let dataDir: string;
let rpcUrl: string;
let startBlock = 0;

if (external) {
	dataDir = process.env.CHAINLAKE_DATA_DIR ?? "data";
	rpcUrl = external;
	const rpc = createRpcClient({ urls: [rpcUrl], logger });
	const head = await ethBlockNumber(rpc);
	startBlock = Number(process.env.CHAINLAKE_START_BLOCK ?? Math.max(0, head - 100));
} else {
	dataDir = process.env.CHAINLAKE_DEMO_DIR ?? join("data", "demo");
	rmSync(dataDir, { recursive: true, force: true });
	logger.info("starting a local anvil chain and the demo workload…");
	anvil = await startAnvil({ chainId: 31337 });
	rpcUrl = anvil.url;
	work = await runWorkload({ rpcUrl });
	await generateActivity({ rpcUrl, contracts: work.contracts, blocks: 5, txsPerBlock: 12 });
}

const rpc = createRpcClient({ urls: [rpcUrl], logger });
const chain = parseChainId(`eip155-${await ethChainId(rpc)}`);
if (!external) {
	const s = await createBackfill({ rpc, chain, dataDir, logger }).run({ from: 0, to: "latest", traces: "auto" });
	logger.info(`backfilled ${s.blocks} blocks of ${chain.id}`);
}

// Keep the demo chain busy: one block of mixed activity every ACTIVITY_INTERVAL_MS.
let stopping = false;
const activity = (async () => {
	if (!work) return;
	for (let i = 0; !stopping; i++) {
		await new Promise((r) => setTimeout(r, ACTIVITY_INTERVAL_MS));
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
let keyring: ReturnType<typeof createKeyring>;
try {
	// Before anything starts: a damaged key file stops the start with a message naming it.
	keyring = createKeyring({ path: keysPath(dataDir), envKeys: [demoKey] });
} catch (err) {
	process.stderr.write(`${(err as Error).message}\n`);
	process.exit(2);
}
const follow = startFollowers([{ chain: chain.id, urls: [rpcUrl] }], { dataDir, logger, startBlock, pollMs: 500 });
const store = await createStore(dataDir);
const app = await buildApp({
	store,
	keyring,
	dataDir,
	followers: follow.sources,
	// The same per-key limit as `npm run serve` (CHAINLAKE_RATE_LIMIT / CHAINLAKE_RATE_BURST to change it).
	rateLimit: parseRateLimit(process.env.CHAINLAKE_RATE_LIMIT, process.env.CHAINLAKE_RATE_BURST),
	logger: { level: process.env.LOG_LEVEL ?? "warn", redact: ["req.headers.authorization"] },
	// POST /{chain}/v1/sql for notebooks, when asked for (README "SQL over HTTP").
	sql: { enabled: process.env.CHAINLAKE_SQL === "1" },
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
		`  health:    ${address}/readyz   metrics: ${address}/metrics`,
		"try:",
		...curls.map((c) => `  ${c}`),
		"Ctrl-C stops everything.",
		"",
	].join("\n"),
);

const shutdown = async () => {
	if (stopping) return;
	stopping = true;
	logger.info("stopping…");
	await activity;
	await follow.stop();
	await app.close();
	store.close();
	await anvil?.stop();
	process.exit(0);
};
// A second Ctrl-C (or SIGTERM) exits at once.
onStopSignal(shutdown, logger.info);
