/**
 * `npm run bench:request-path -- --data-dir data/synth-M`: what the API adds to a lookup, without
 * a socket or a client beside it (issue 26's "HTTP overhead over the query layer"): the same
 * transaction and block by hash through the query layer alone and through the app (Fastify's
 * inject: routing, the key check, validation, caching headers, the answer's JSON), and the
 * memoised /blocks/latest (the app alone). Prints wall time and this process's CPU time (DuckDB's
 * threads included) a request; then a median wallet's transfers page (limit 100, oldest and
 * newest first) statement by statement: each statement's window of blocks, time and rows, as the
 * query layer runs them (query/list.ts: the probe, then windows of 1, 2, 4 ... chunks). Last, the
 * same calls after the process sat idle for 0, 1 and 5 ms before each (as a service waits between
 * a client's requests): what a call costs when its threads were asleep. Never asserts.
 */
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildApp } from "../src/api/app.js";
import { createKeyring } from "../src/api/keys.js";
import { findBlockByHash } from "../src/query/blocks.js";
import type { Page } from "../src/query/list.js";
import { createStore } from "../src/query/store/create-store.js";
import type { Snapshot } from "../src/query/store/store.js";
import { findTransactionWithLogs } from "../src/query/transactions.js";
import { findTransfers } from "../src/query/transfers.js";
import { type SynthTargets, targetsPath } from "../src/synth/targets.js";
import { parseChainId } from "../src/util/chain.js";
import { flagUsage, startCli } from "../src/util/cli.js";

const options = {
	"data-dir": { type: "string", default: "data/synth-M" },
	chain: { type: "string", default: "eip155-1" },
	n: { type: "string", default: "400" },
} as const;
const { values } = parseArgs({
	args: startCli({ usage: flagUsage("npm run bench:request-path -- --data-dir <synth folder> [flags]", options) }),
	options,
});
const dataDir = values["data-dir"];
const chain = parseChainId(values.chain);
const n = Number(values.n);
const targets = JSON.parse(readFileSync(targetsPath(dataDir, chain.id), "utf8")) as SynthTargets;
const tx = targets.txHashes[0] as string;
const block = targets.blockHashes[0] as string;

const KEY = "bench-key-0123456789";
const store = await createStore(dataDir);
const app = await buildApp({
	store,
	keyring: createKeyring({ path: join(tmpdir(), "chainlake-bench-no-keys.json"), envKeys: [KEY] }),
	dataDir,
});
const headers = { authorization: `Bearer ${KEY}` };

/** Wall and CPU ms a call, over `n` calls after 20 unmeasured. */
async function measure(name: string, call: () => Promise<unknown>): Promise<void> {
	for (let i = 0; i < 20; i++) await call();
	const cpu = process.cpuUsage();
	const t = performance.now();
	for (let i = 0; i < n; i++) await call();
	const wall = (performance.now() - t) / n;
	const used = process.cpuUsage(cpu);
	console.log(
		`${name.padEnd(36)} wall ${wall.toFixed(3)} ms, cpu ${((used.user + used.system) / 1000 / n).toFixed(3)} ms a request`,
	);
}
const get = (url: string) => async () => {
	const res = await app.inject({ method: "GET", url: `/${chain.id}/v1${url}`, headers });
	if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
};

/**
 * p50 ms of `call` after `idleMs` of idling (a timer) before each, over `n` calls: what a client's
 * pauses cost each answer where a CPU that halted runs slowly for a while after it wakes (this
 * machine: BENCHMARKS.md "twenty-sixth figures").
 */
async function afterIdle(call: () => Promise<unknown>, idleMs: number): Promise<number> {
	const times: number[] = [];
	for (let i = 0; i < n; i++) {
		if (idleMs > 0) await new Promise((r) => setTimeout(r, idleMs));
		const t = performance.now();
		await call();
		times.push(performance.now() - t);
	}
	times.sort((a, b) => a - b);
	return times[times.length >> 1] as number;
}

/** A snapshot whose statements note their window, time and rows in `log`. */
function noting(snap: Snapshot, log: string[]): Snapshot {
	const query: Snapshot["query"] = async (sql, params, window, key) => {
		const t = performance.now();
		const rows = await snap.query(sql, params, window, key);
		log.push(`blocks ${window?.join("-") ?? "all"}: ${(performance.now() - t).toFixed(2)} ms, ${rows.length} rows`);
		return rows;
	};
	return Object.assign(Object.create(snap) as Snapshot, { query });
}

/** A median wallet's transfers page, statement by statement (the run's median of 15, after 3 unmeasured). */
async function statements(wallet: string, order: Page["order"]): Promise<void> {
	const page: Page = { start: 0, end: targets.head, limit: 100, order };
	let runs: { ms: number; log: string[] }[] = [];
	for (let i = 0; i < 18; i++) {
		const log: string[] = [];
		const t = performance.now();
		await findTransfers(noting(store.snapshot(chain.id), log), { address: wallet }, page);
		runs.push({ ms: performance.now() - t, log });
	}
	runs = runs.slice(3).sort((a, b) => a.ms - b.ms);
	const median = runs[runs.length >> 1] as { ms: number; log: string[] };
	console.log(`wallet ${wallet} transfers, ${order === "asc" ? "oldest" : "newest"} first: ${median.ms.toFixed(2)} ms`);
	for (const line of median.log) console.log(`  ${line}`);
}

try {
	for (const w of targets.addresses.median.slice(0, 3)) {
		await statements(w.value, "asc");
		await statements(w.value, "desc");
	}
	await measure("app: /blocks/latest (memoised)", get("/blocks/latest"));
	await measure("query layer: tx by hash with logs", () => findTransactionWithLogs(store.snapshot(chain.id), tx));
	await measure("app: /txs/{hash}", get(`/txs/${tx}`));
	await measure("query layer: block by hash", () => findBlockByHash(store.snapshot(chain.id), block));
	await measure("app: /blocks/{hash}", get(`/blocks/${block}`));
	const idle: [string, () => Promise<unknown>][] = [
		["query layer: SELECT 1", () => store.snapshot(chain.id).query("SELECT 1")],
		["query layer: block by hash", () => findBlockByHash(store.snapshot(chain.id), block)],
		["app: /blocks/latest (memoised)", get("/blocks/latest")],
		["app: /blocks/{hash}", get(`/blocks/${block}`)],
	];
	for (const [name, call] of idle) {
		const p50s: string[] = [];
		for (const ms of [0, 1, 5]) p50s.push(`${ms} ms idle ${(await afterIdle(call, ms)).toFixed(3)}`);
		console.log(`${name.padEnd(36)} p50 after ${p50s.join(", ")}`);
	}
} finally {
	await app.close();
	store.close();
}
