/**
 * What running each SQL statement in a process of its own costs (issue 27):
 * `npm run bench:sql-isolation -- --data-dir <lake> [--chain eip155-1] [--n 20] [--bomb]`.
 * Times `--n` runs of a trivial and a typical statement both ways, alternating: in this process
 * (runUserSql, how the endpoint ran them before) and through a SQL process (sqlProcesses, how it
 * runs them now: IPC both ways, the rows copied across), with the same limits and a sink that
 * encodes the rows as the JSON answer does. Prints p50/p90 of each. With --bomb, also sends
 * `SELECT length(repeat('x', 1500000000))` through a process under a 512MB statement memory and
 * prints its answer, how long it took, the SQL process's peak RSS and this process's RSS around it
 * (not in this process: it took 37 s and 3 GB there, issue 27).
 */
import { realpathSync } from "node:fs";
import { parseArgs } from "node:util";
import { stringifyExact } from "../src/api/answers/records.js";
import { DEFAULT_SQL_LIMITS, type SqlLimits } from "../src/query/sql/sql-limits.js";
import { sqlProcesses } from "../src/query/sql/sql-processes.js";
import { SqlRefusedError } from "../src/query/sql/sql-refusals.js";
import { runUserSql } from "../src/query/sql/user-sql.js";
import { readManifestSafe } from "../src/store/format/manifest.js";
import { flagUsage, startCli, usageError } from "../src/util/cli.js";
import { fmt, summarise } from "./bench/measure.js";

const options = {
	"data-dir": { type: "string" },
	chain: { type: "string", default: "eip155-1" },
	n: { type: "string", default: "20" },
	bomb: { type: "boolean", default: false },
} as const;
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage("npm run bench:sql-isolation -- --data-dir <lake> [--chain eip155-1] [--n 20] [--bomb]", options),
	}),
	options,
});
if (!values["data-dir"]) usageError("--data-dir is needed: a lake, e.g. one npm run synth -- --scale S wrote");
const dataDir = realpathSync(values["data-dir"] as string);
const chain = values.chain as string;
const n = Number(values.n);
const manifest = readManifestSafe(dataDir, chain);
const limits: SqlLimits = { ...DEFAULT_SQL_LIMITS, timeoutMs: 14_000, memory: "512MB", threads: 1 };

const statements: [string, string][] = [
	["trivial: SELECT 1", "SELECT 1 AS one"],
	[
		"typical: transfers per standard, last 1000 blocks",
		"SELECT token_standard, count(*) AS n, sum(value_f64) AS total FROM transfers WHERE block_number > (SELECT max(number) - 1000 FROM blocks) GROUP BY ALL ORDER BY ALL",
	],
	[
		"typical: one block's transactions (150 rows)",
		"SELECT transaction_hash, from_address, to_address, value FROM transactions WHERE block_number = (SELECT max(number) - 10 FROM blocks)",
	],
	// The rows cross a pipe: what that costs shows on a large answer.
	[
		"large: 20,000 transactions",
		"SELECT transaction_hash, from_address, to_address, value FROM transactions WHERE block_number > (SELECT max(number) - 200 FROM blocks) LIMIT 20000",
	],
];

/** The JSON answer's encoding, as api/routes/sql.ts does it, so both ways pay it. */
const sink = () => ({
	columns() {},
	rows(rows: unknown[][]) {
		let bytes = 0;
		for (const row of rows) bytes += stringifyExact(row).length;
		return bytes;
	},
});

const processes = sqlProcesses(limits);
const job = { dataDir, manifest, parquet: false };
console.log(`lake ${dataDir} (${chain}): ${manifest?.chunks.length ?? 0} chunks; ${n} runs of each, alternating`);
console.log("statement | in the API process p50 / p90 ms | in a SQL process p50 / p90 ms | rows");
try {
	for (const [name, sql] of statements) {
		await runUserSql({ ...job, sql, limits, sink: sink() });
		await processes.run({ ...job, sql }, sink());
		const before: number[] = [];
		const after: number[] = [];
		let rows = 0;
		for (let i = 0; i < n; i++) {
			let t = performance.now();
			rows = (await runUserSql({ ...job, sql, limits, sink: sink() })).rows;
			before.push(performance.now() - t);
			t = performance.now();
			await processes.run({ ...job, sql }, sink());
			after.push(performance.now() - t);
		}
		const [b, a] = [summarise(before), summarise(after)];
		console.log(`${name} | ${fmt(b.p50)} / ${fmt(b.p90)} | ${fmt(a.p50)} / ${fmt(a.p90)} | ${rows}`);
	}
	if (values.bomb) {
		const rssBefore = process.memoryUsage().rss;
		const t = performance.now();
		let answer = "";
		try {
			await processes.run({ ...job, sql: "SELECT length(repeat('x', 1500000000)) AS n" }, sink());
			answer = "answered";
		} catch (err) {
			answer = err instanceof SqlRefusedError ? `${err.status} ${err.code}: ${err.message}` : String(err);
		}
		const ms = performance.now() - t;
		const mb = (b: number) => (b / 1024 / 1024).toFixed(0);
		console.log(`bomb: ${answer}`);
		console.log(
			`bomb: ${fmt(ms)} ms; this process's RSS ${mb(rssBefore)} -> ${mb(process.memoryUsage().rss)} MiB (cap of a SQL process ${mb(processes.capBytes)} MiB)`,
		);
	}
} finally {
	processes.close();
}
