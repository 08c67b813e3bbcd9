/**
 * The SQL endpoint's cost on a lake: `npm run bench:sql -- --data-dir /path/to/synth-M [--chain eip155-1] [--n 20]`.
 * Times `--n` requests of each statement through POST /{chain}/v1/sql (real HTTP on a loopback
 * socket; each statement in a DuckDB instance of its own, query/sql/user-sql.ts) and the same
 * statement on one DuckDB instance kept open with the same views (what `npm run sql` does), so
 * the difference is the per-statement instance: its making, lockdown and views. Prints p50/p90.
 */
import { realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DuckDBInstance } from "@duckdb/node-api";
import { buildApp } from "../src/api/app.js";
import { createKeyring } from "../src/api/keys.js";
import { createStore } from "../src/query/store/create-store.js";
import { datasetViews } from "../src/query/views.js";
import { readManifestSafe } from "../src/store/format/manifest.js";
import { flagUsage, startCli, usageError } from "../src/util/cli.js";
import { fmt, summarise } from "./bench/measure.js";

const options = {
	"data-dir": { type: "string" },
	chain: { type: "string", default: "eip155-1" },
	n: { type: "string", default: "20" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({ usage: flagUsage("npm run bench:sql -- --data-dir <lake> [--chain eip155-1] [--n 20]", options) }),
	options,
});
if (!values["data-dir"]) {
	usageError("--data-dir is needed: a lake, e.g. one npm run synth -- --scale M wrote");
}
const dataDir = realpathSync(values["data-dir"]);
const chain = values.chain as string;
const n = Number(values.n);
const KEY = "bench-key-0123456789";

const manifest = readManifestSafe(dataDir, chain);
const files = (manifest?.chunks ?? []).length;
const statements: [string, string][] = [
	["SELECT 1 (the instance alone)", "SELECT 1 AS one"],
	["count of transfers", "SELECT count(*) AS n FROM transfers"],
	[
		"transfers per standard, last 1000 blocks",
		`SELECT token_standard, count(*) AS n, sum(value_f64) AS total FROM transfers WHERE block_number > (SELECT max(number) - 1000 FROM blocks) GROUP BY ALL ORDER BY ALL`,
	],
	[
		"top 10 ERC-20 contracts by transfers (whole chain)",
		"SELECT contract, count(*) AS n, sum(value_d38) AS total FROM transfers WHERE token_standard = 'erc20' GROUP BY contract ORDER BY n DESC LIMIT 10",
	],
	[
		"one block's transactions",
		"SELECT transaction_hash, from_address, to_address, value FROM transactions WHERE block_number = (SELECT max(number) - 10 FROM blocks)",
	],
];

const store = await createStore(dataDir);
const app = await buildApp({
	store,
	keyring: createKeyring({ path: join(tmpdir(), "chainlake-bench-sql-keys.json"), envKeys: [KEY] }),
	dataDir,
	sql: { enabled: true, limits: { timeoutMs: 14_000, memory: "2GB", threads: 2 } },
});
const base = await app.listen({ port: 0, host: "127.0.0.1" });

const kept = await DuckDBInstance.create(":memory:", { threads: "2", memory_limit: "2GB" });
const conn = await kept.connect();
for (const s of datasetViews(dataDir, manifest)) if (!s.startsWith("--")) await conn.run(s);

console.log(`lake ${dataDir} (${chain}): ${files} chunks in the manifest; ${n} runs per statement`);
console.log("statement | endpoint p50 / p90 ms | one kept instance p50 / p90 ms | rows");
try {
	for (const [name, sql] of statements) {
		const viaApi: number[] = [];
		const kept: number[] = [];
		let rows = "";
		for (let i = 0; i < n; i++) {
			let t = performance.now();
			const res = await fetch(`${base}/${chain}/v1/sql`, {
				method: "POST",
				headers: { authorization: `Bearer ${KEY}`, "content-type": "text/plain" },
				body: sql,
			});
			const body = (await res.json()) as { row_count?: number; code?: string };
			viaApi.push(performance.now() - t);
			// A statement past the endpoint's limits is a figure too (its answer says which).
			rows = res.status === 200 ? String(body.row_count) : `${res.status} ${body.code}`;
			t = performance.now();
			await conn.runAndReadAll(sql);
			kept.push(performance.now() - t);
		}
		const [a, k] = [summarise(viaApi), summarise(kept)];
		console.log(`${name} | ${fmt(a.p50)} / ${fmt(a.p90)} | ${fmt(k.p50)} / ${fmt(k.p90)} | ${rows}`);
	}
} finally {
	conn.closeSync();
	kept.closeSync();
	await app.close();
	store.close();
}
