/**
 * Latency of every endpoint on the anvil test dataset: `npm run bench:api [-- --blocks 300 --txs 20 --n 200]`.
 * Starts anvil, runs the workload plus mixed activity, backfills it, serves the API on a loopback
 * socket and times `--n` sequential requests per endpoint (real HTTP, keep-alive), printing p50/p99.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildApp } from "../src/api/app.js";
import { createKeyring } from "../src/api/keys.js";
import { createBackfill } from "../src/backfill/backfill.js";
import { createStore } from "../src/query/store/create-store.js";
import { createRpcClient } from "../src/rpc/client.js";
import { parseChainId } from "../src/util/chain.js";
import { flagUsage, startCli } from "../src/util/cli.js";
import { createLogger } from "../src/util/logger.js";
import { generateActivity } from "../src/workload/activity.js";
import { startAnvil } from "../src/workload/anvil.js";
import { runWorkload } from "../src/workload/run.js";

const options = {
	blocks: { type: "string", default: "300" },
	txs: { type: "string", default: "20" },
	n: { type: "string", default: "200" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({ usage: flagUsage("npm run bench:api -- [--blocks 300] [--txs 20] [--n 200]", options) }),
	options,
});
const KEY = "bench-key";
const anvil = await startAnvil({ chainId: 31337 });
const dir = await mkdtemp(join(tmpdir(), "chainlake-bench-api-"));
try {
	const work = await runWorkload({ rpcUrl: anvil.url });
	await generateActivity({
		rpcUrl: anvil.url,
		contracts: work.contracts,
		blocks: Number(values.blocks),
		txsPerBlock: Number(values.txs),
	});
	const logger = createLogger({ quiet: true });
	const summary = await createBackfill({
		rpc: createRpcClient({ urls: [anvil.url], logger }),
		chain: parseChainId("eip155-31337"),
		dataDir: dir,
		logger,
	}).run({ from: 0, to: "latest", traces: "parity" });
	const store = await createStore(dir);
	const app = await buildApp({
		store,
		keyring: createKeyring({ path: join(dir, "_keys.json"), envKeys: [KEY] }),
		dataDir: dir,
	});
	const base = `${await app.listen({ port: 0, host: "127.0.0.1" })}/eip155-31337/v1`;

	const { accounts: a, contracts: c } = work;
	const tx = work.txs[work.txs.length - 1]?.hash;
	const head = (await (
		await fetch(`${base}/blocks/latest`, { headers: { authorization: `Bearer ${KEY}` } })
	).json()) as { hash: string };
	const endpoints: [string, string][] = [
		[
			"wallet transfers (all assets, whole history, limit 100)",
			`/address/${a.alice}/transfers?asset_type=native,ft,nft&limit=100`,
		],
		[
			"wallet transfers (ft, last 100 blocks)",
			`/address/${a.alice}/transfers?block_number_start=-100&block_number_end=latest`,
		],
		["wallet txs (with logs)", `/address/${a.alice}/txs?include_logs=true&limit=100`],
		["tx by hash", `/txs/${tx}`],
		["tx logs", `/txs/${tx}/logs`],
		["latest block", "/blocks/latest"],
		["block by hash", `/blocks/${head.hash}`],
		["block range (100 blocks)", "/blocks?block_number_start=-99&block_number_end=latest&limit=100"],
		["contract creations by caller", `/contracts/creates?caller=${c.factory}&limit=100`],
		["self-destructs by contract", `/contracts/self-destructs?contract=${c.selfDestructor}`],
		["token transfers of a contract", `/contract/${c.token20}/transfers?limit=100`],
		[
			"events by contract+topic",
			`/events?contract=${c.token20}&topic_0=0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef&limit=100`,
		],
		["calls to a contract", `/calls?to=${c.forwarder}&limit=100`],
	];
	console.log(
		`dataset: ${summary.blocks} blocks, rows ${Object.entries(summary.rows)
			.map(([d, n]) => `${d}=${n}`)
			.join(" ")}; ${values.n} sequential requests per endpoint`,
	);
	console.log("| endpoint | p50 ms | p99 ms | items |\n|---|---:|---:|---:|");
	for (const [name, path] of endpoints) {
		const times: number[] = [];
		let items = 0;
		for (let i = 0; i < Number(values.n) + 10; i++) {
			const t = performance.now();
			const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${KEY}` } });
			const body = (await res.json()) as { items?: unknown[] };
			if (res.status !== 200) throw new Error(`${name}: HTTP ${res.status} ${JSON.stringify(body)}`);
			if (i >= 10) times.push(performance.now() - t); // the first 10 warm caches up
			items = body.items?.length ?? 1;
		}
		times.sort((x, y) => x - y);
		const q = (p: number) => (times[Math.min(times.length - 1, Math.floor(p * times.length))] ?? 0).toFixed(2);
		console.log(`| ${name} | ${q(0.5)} | ${q(0.99)} | ${items} |`);
	}
	await app.close();
	store.close();
} finally {
	await anvil.stop();
	await rm(dir, { recursive: true, force: true });
}
