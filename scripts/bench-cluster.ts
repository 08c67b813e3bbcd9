/**
 * Throughput of 1 against 2 API processes behind HAProxy: `npm run bench:cluster -- --data-dir
 * <synth folder> [--seconds 20] [--connections 32] [--keys 8]`. For each process count, starts
 * `npm run cluster` (no writer: the folder holds still) and runs the mixed workload of the load
 * test (scripts/load/requests.ts, the targets `npm run synth` saved) through HAProxy, the
 * connections split over `--keys` API keys (HAProxy hashes keys onto processes). Prints
 * requests/s, p50/p99 and the answers by status, for 1 process, and 2 with 2 and with 1 DuckDB
 * thread each. On one machine the processes share its cores
 * with HAProxy and the load generator: read the ratio with that in mind.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { SynthTargets } from "../src/synth/targets.js";
import { targetsPath } from "../src/synth/targets.js";
import { flagUsage, startCli, usageError } from "../src/util/cli.js";
import { type LoadResult, runLoad } from "./load/load.js";
import { mixedPaths } from "./load/requests.js";

const options = {
	"data-dir": { type: "string" },
	chain: { type: "string", default: "eip155-1" },
	seconds: { type: "string", default: "20" },
	connections: { type: "string", default: "32" },
	keys: { type: "string", default: "8" },
	port: { type: "string", default: "28080" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage(
			"npm run bench:cluster -- --data-dir <synth folder> [--seconds 20] [--connections 32] [--keys 8]",
			options,
		),
	}),
	options,
});
if (!values["data-dir"]) {
	usageError("--data-dir is required: a synthetic chain (npm run synth)");
}
const dataDir = values["data-dir"];
const chain = values.chain as string;
const targets = JSON.parse(readFileSync(targetsPath(dataDir, chain), "utf8")) as SynthTargets;
const paths = mixedPaths(targets).map((p) => `/${chain}/v1${p}`);
const keys = Array.from({ length: Number(values.keys) }, (_, i) => `bench-cluster-${i}`);
const port = Number(values.port);
const seconds = Number(values.seconds);
const connections = Number(values.connections);

// Two processes twice: with DuckDB's default 2 threads each (4 on this machine's 2 cores), and
// with 1 each (the cores shared out).
for (const [processes, threads] of [
	[1, 2],
	[2, 2],
	[2, 1],
] as const) {
	const cluster = spawn(
		process.execPath,
		[
			...["--import", "tsx", "scripts/cluster.ts", "--processes", String(processes), "--threads", String(threads)],
			...["--port", String(port), "--data-dir", dataDir, "--rate-limit", "0"],
		],
		{ env: { ...process.env, CHAINLAKE_API_KEYS: keys.join(",") }, stdio: ["ignore", "ignore", "pipe"] },
	);
	let output = "";
	cluster.stderr?.on("data", (c) => {
		output += c;
	});
	try {
		// Every key answered through HAProxy: every process is up and ready.
		for (const deadline = Date.now() + 120_000; ; ) {
			const ok = await Promise.all(
				keys.map((k) =>
					fetch(`http://127.0.0.1:${port}/${chain}/v1/blocks/latest`, { headers: { authorization: `Bearer ${k}` } })
						.then((r) => r.status === 200)
						.catch(() => false),
				),
			);
			if (ok.every(Boolean)) break;
			if (Date.now() > deadline) throw new Error(`the cluster did not come up:\n${output}`);
			await new Promise((r) => setTimeout(r, 250));
		}
		const per = Math.max(1, Math.floor(connections / keys.length));
		const runs: LoadResult[] = await Promise.all(
			keys.map((key) =>
				runLoad({
					base: `http://127.0.0.1:${port}`,
					key,
					paths,
					connections: per,
					seconds,
					pid: cluster.pid as number,
				}),
			),
		);
		const requests = runs.reduce((n, r) => n + r.requests, 0);
		const statuses: Record<string, number> = {};
		for (const r of runs) for (const [s, n] of Object.entries(r.statuses)) statuses[s] = (statuses[s] ?? 0) + n;
		const errors = runs.reduce((n, r) => n + r.errors + r.timeouts, 0);
		process.stdout.write(
			`${processes} API process(es), ${threads} DuckDB thread(s) each: ${(requests / seconds).toFixed(1)} requests/s over ${per * keys.length} connections and ${keys.length} keys, ${seconds} s; p50 of the keys' p50 ${median(runs.map((r) => r.latencyMs.p50))} ms, worst p99 ${Math.max(...runs.map((r) => r.latencyMs.p99))} ms; answers ${JSON.stringify(statuses)}, errors ${errors}\n`,
		);
	} finally {
		cluster.kill("SIGTERM");
		await new Promise((r) => cluster.once("exit", r));
	}
}

function median(xs: number[]): number {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)] ?? 0;
}
