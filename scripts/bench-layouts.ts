/**
 * `npm run bench:layouts -- --a <data dir> --b <data dir> [--n 60] [--load-seconds 10]`: the same
 * synthetic chain stored two ways (e.g. `npm run synth -- --partition-size 2000` and `-- 20`),
 * each served by its own `scripts/serve.ts` process, asked every benchmark question in turns
 * (A then B, or B then A, alternating each round), so that the noise of a shared machine falls
 * on both alike. Prints p50/p99 per case for each and the ratio B/A of the p50s, then the mixed
 * load's throughput on each (in alternating slices). Figures are printed, never asserted.
 * `--a-flags` / `--b-flags`: more flags of `npm run serve` for one side (e.g. `--b-flags="--threads 1"`
 * with the same folder as A and B: one setting against another).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { SynthTargets } from "../src/synth/targets.js";
import { targetsPath } from "../src/synth/targets.js";
import { parseChainId } from "../src/util/chain.js";
import { flagUsage, startCli, usageError } from "../src/util/cli.js";
import { benchCases } from "./bench/cases.js";
import { fmt, summarise } from "./bench/measure.js";
import { startService } from "./bench/server.js";
import { runLoad } from "./load/load.js";
import { mixedPaths } from "./load/requests.js";

const options = {
	a: { type: "string" },
	b: { type: "string" },
	n: { type: "string", default: "60" },
	"load-seconds": { type: "string", default: "10" },
	connections: { type: "string", default: "16" },
	port: { type: "string", default: "18090" },
	"a-flags": { type: "string", default: "" },
	"b-flags": { type: "string", default: "" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage("npm run bench:layouts -- --a <data dir> --b <data dir> [--n 60] [--load-seconds 10]", options),
	}),
	options,
});
if (!values.a || !values.b) {
	usageError("--a and --b are required: two folders of the same synthetic chain");
}
const KEY = "bench-key-0123456789";
const chain = parseChainId("eip155-1");
const n = Number(values.n);
const say = (s: string) => process.stdout.write(`${s}\n`);
// The same chain in both: A's targets serve for both.
const targets = JSON.parse(readFileSync(targetsPath(values.a, chain.id), "utf8")) as SynthTargets;
const cases = benchCases(targets);
const port = Number(values.port);
const flags = (s: string) => ({ args: s.split(/\s+/).filter(Boolean) });
const services = [
	await startService(values.a, port, KEY, flags(values["a-flags"])),
	await startService(values.b, port + 1, KEY, flags(values["b-flags"])),
];
const headers = { authorization: `Bearer ${KEY}` };

try {
	say(`| query | A p50 / p99 ms | B p50 / p99 ms | B/A (p50) |`);
	say(`|---|---:|---:|---:|`);
	for (const c of cases) {
		const ms: number[][] = [[], []];
		const ask = async (i: number, keep: boolean) => {
			const url = `${services[i]?.base}/${chain.id}/v1${c.path}`;
			const t = performance.now();
			const res = await fetch(url, { headers });
			await res.arrayBuffer();
			if (res.status !== 200 && !(res.status === 404 && c.name.includes("missing")))
				throw new Error(`${c.name}: HTTP ${res.status} from ${i === 0 ? "A" : "B"}`);
			if (keep) ms[i]?.push(performance.now() - t);
		};
		for (let w = 0; w < 3; w++) for (const i of [0, 1]) await ask(i, false);
		for (let round = 0; round < n; round++) for (const i of round % 2 ? [1, 0] : [0, 1]) await ask(i, true);
		const [a, b] = ms.map(summarise) as [ReturnType<typeof summarise>, ReturnType<typeof summarise>];
		say(
			`| ${c.name} | ${fmt(a.p50)} / ${fmt(a.p99)} | ${fmt(b.p50)} / ${fmt(b.p99)} | ${(b.p50 / a.p50).toFixed(2)} |`,
		);
	}
	const seconds = Number(values["load-seconds"]);
	if (seconds > 0) {
		const rps = [0, 0];
		for (const slice of [0, 1, 1, 0]) {
			const s = services[slice];
			if (!s) continue;
			const r = await runLoad({
				base: s.base,
				key: KEY,
				paths: mixedPaths(targets).map((p) => `/${chain.id}/v1${p}`),
				connections: Number(values.connections),
				seconds,
				pid: s.pid,
			});
			rps[slice] = (rps[slice] ?? 0) + r.requestsPerSecond / 2;
		}
		say(
			`\nmixed load, ${values.connections} connections, 2 × ${seconds} s each: A ${rps[0]?.toFixed(1)} req/s, B ${rps[1]?.toFixed(1)} req/s`,
		);
	}
	say(`peak RSS: A ${(services[0]?.peakRss() ?? 0) / 2 ** 20} MiB, B ${(services[1]?.peakRss() ?? 0) / 2 ** 20} MiB`);
} finally {
	for (const s of services) await s.stop();
}
