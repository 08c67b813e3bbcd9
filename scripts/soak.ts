/**
 * `npm run soak -- [--data-dir data/synth-M] [--connections 200] [--duration 60] [--suites] [--out f.json]`:
 * the long versions of the reliability tests (RELIABILITY.md), with figures printed.
 *  1. Load: `--connections` concurrent clients for `--duration` seconds on the mixed workload
 *     (scripts/load/requests.ts) against the service process over a synthetic chain (dataset M
 *     unless told otherwise; written with `npm run synth` first when the folder has none). Fails
 *     on any error, timeout or non-200 answer, or when the service's memory grows by more than
 *     10% from the first third of the run to the last.
 *  2. With `--suites`, the test files whose long versions are switched on by environment
 *     variables: fuzzing with 20,000 runs, the full crash-point matrix, the RPC faults under
 *     three more seeds, and the whole index-listing matrix.
 * Exits 1 when anything failed.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { SCALES } from "../src/synth/scales.js";
import { writeSynthChain } from "../src/synth/synth.js";
import { computeTargets, type SynthTargets, saveTargets, targetsPath } from "../src/synth/targets.js";
import { parseChainId } from "../src/util/chain.js";
import { startCli, usageError } from "../src/util/cli.js";
import { startService } from "./bench/server.js";
import { runLoad } from "./load/load.js";
import { mixedPaths } from "./load/requests.js";

const USAGE = `usage: npm run soak -- [--data-dir data/synth-M] [--connections 200] [--duration 60] [--suites] [--out f.json]
  --data-dir <dir>       a synthetic chain to load (default data/synth-M; written first when missing)
  --connections <n>      concurrent clients (default 200)
  --duration <s>         seconds of load (default 60)
  --port <n>             the service's port (default 18090)
  --suites               also run the long versions of the test files
  --out <file>           write the figures as JSON`;

const argv = startCli({ usage: USAGE, dataDir: () => values["data-dir"] });
const { values } = parseArgs({
	args: argv,
	options: {
		"data-dir": { type: "string", default: "data/synth-M" },
		connections: { type: "string", default: "200" },
		duration: { type: "string", default: "60" },
		port: { type: "string", default: "18090" },
		suites: { type: "boolean", default: false },
		out: { type: "string" },
	},
});
for (const flag of ["connections", "duration", "port"] as const) {
	const v = Number(values[flag]);
	if (!Number.isInteger(v) || v < 1) usageError(`--${flag} must be a whole number above 0, got ${values[flag]}`);
}
const dataDir = values["data-dir"] as string;
const chain = parseChainId("eip155-1");
const say = (s: string) => process.stdout.write(`${s}\n`);
const failures: string[] = [];
const report: Record<string, unknown> = { when: new Date().toISOString(), dataDir };

// 1. Load.
if (!existsSync(targetsPath(dataDir, chain.id))) {
	say(`no synthetic chain in ${dataDir}: writing dataset M there first (npm run synth -- --scale M)`);
	await writeSynthChain({ scale: SCALES.M, chain, dataDir, partitionSize: SCALES.M.partitionSize });
	await saveTargets(dataDir, await computeTargets(dataDir, chain.id));
}
const targets = JSON.parse(readFileSync(targetsPath(dataDir, chain.id), "utf8")) as SynthTargets;
const key = "soak-key";
const service = await startService(dataDir, Number(values.port), key);
try {
	const paths = mixedPaths(targets).map((p) => `/${chain.id}/v1${p}`);
	say(`load: ${values.connections} clients for ${values.duration} s over ${paths.length} paths on ${dataDir}`);
	const r = await runLoad({
		base: service.base,
		key,
		paths,
		connections: Number(values.connections),
		seconds: Number(values.duration),
		pid: service.pid,
	});
	report.load = r;
	const mib = (b: number) => (b / 2 ** 20).toFixed(0);
	say(
		`  ${r.requests} requests, ${r.requestsPerSecond.toFixed(1)}/s; statuses ${JSON.stringify(r.statuses)}; errors ${r.errors}, timeouts ${r.timeouts}`,
	);
	say(`  latency p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms, max ${r.latencyMs.max} ms`);
	say(
		`  service RSS: first ${mib(r.rssSamples[1] ?? 0)} MiB, peak ${mib(Math.max(...r.rssSamples))} MiB, last ${mib(r.rssSamples.at(-1) ?? 0)} MiB; last third vs first: ${(r.rssGrowth * 100).toFixed(1)}%`,
	);
	if (r.errors || r.timeouts || r.non2xx) failures.push("load: some requests failed");
	if (r.rssGrowth > 0.1) failures.push(`load: memory grew ${(r.rssGrowth * 100).toFixed(1)}%`);
} finally {
	await service.stop();
}

// 2. The long versions of the test files.
if (values.suites) {
	const runs: [string, string[], Record<string, string>][] = [
		["fuzz, 20,000 runs", ["test/api/fuzz.test.ts"], { CHAINLAKE_FUZZ_RUNS: "20000" }],
		["crash points, full matrix", ["test/crash"], { CHAINLAKE_CRASH_FULL: "1", CHAINLAKE_CRASH_SOAK: "1" }],
		...[11, 22, 33].map(
			(seed) =>
				[
					`RPC faults, seed ${seed}`,
					["test/backfill/faults.test.ts", "test/follow/faults.test.ts"],
					{ CHAINLAKE_FAULT_SEED: String(seed) },
				] as [string, string[], Record<string, string>],
		),
		["index listing, full matrix", ["test/query/index-listing.test.ts"], { CHAINLAKE_INDEX_MATRIX: "full" }],
	];
	const suites: Record<string, { ok: boolean; seconds: number }> = {};
	for (const [name, files, env] of runs) {
		const started = performance.now();
		const res = spawnSync("npx", ["vitest", "run", ...files], { env: { ...process.env, ...env }, stdio: "inherit" });
		const seconds = (performance.now() - started) / 1000;
		suites[name] = { ok: res.status === 0, seconds };
		say(`${name}: ${res.status === 0 ? "passed" : "FAILED"} in ${seconds.toFixed(0)} s`);
		if (res.status !== 0) failures.push(name);
	}
	report.suites = suites;
}

if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 1)}\n`);
say(failures.length ? `soak FAILED: ${failures.join("; ")}` : "soak passed");
process.exit(failures.length ? 1 : 0);
