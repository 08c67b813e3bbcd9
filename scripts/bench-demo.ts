/**
 * What the `npm start` demo leaves on disk and in memory as it runs, against a backfill of the same
 * chain, and how fast Ctrl-C ends it:
 * `npm run bench:demo [-- --interval-ms 1000 --marks 100,400 --port 18700]`.
 *
 * Runs scripts/start.ts in a temp folder (CHAINLAKE_DEMO_DIR) with a block every `--interval-ms`;
 * at each stored block of `--marks` prints the folder's Parquet files, all files and bytes, and the
 * process's RSS and CPU; at the last mark backfills blocks 0..that block from the demo's anvil into
 * another temp folder and prints the same figures; then sends SIGINT and prints how long the demo
 * took to exit and whether it logged an ERROR line. Linux only (/proc for RSS and CPU).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { flagUsage, startCli } from "../src/util/cli.js";

const options = {
	"interval-ms": { type: "string", default: "1000" },
	marks: { type: "string", default: "100,400" },
	port: { type: "string", default: "18700" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage("npm run bench:demo -- [--interval-ms 1000] [--marks 100,400] [--port 18700]", options),
	}),
	options,
});
const marks = values.marks.split(",").map(Number);
const CHAIN = "eip155-31337";

interface FolderFigures {
	files: number;
	parquet: number;
	bytes: number;
}
function walk(dir: string): FolderFigures {
	const sum = { files: 0, parquet: 0, bytes: 0 };
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		const path = join(dir, e.name);
		if (e.isDirectory()) {
			const s = walk(path);
			sum.files += s.files;
			sum.parquet += s.parquet;
			sum.bytes += s.bytes;
			continue;
		}
		sum.files++;
		if (e.name.endsWith(".parquet")) sum.parquet++;
		try {
			sum.bytes += statSync(path).size;
		} catch {
			// Retired between the listing and the stat: not on disk any more.
		}
	}
	return sum;
}
const describe = (s: FolderFigures) => `${s.parquet} Parquet files, ${s.files} files, ${(s.bytes / 1e6).toFixed(1)} MB`;
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;
/** User + system CPU seconds of a process (/proc/<pid>/stat fields 14 and 15, in clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
	const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] as string).split(" ");
	return (Number(fields[11]) + Number(fields[12])) / 100;
}
function storedHead(dir: string): number {
	try {
		const m = JSON.parse(readFileSync(join(dir, CHAIN, "_manifest.json"), "utf8")) as { chunks: { to: number }[] };
		return Math.max(-1, ...m.chunks.map((c) => c.to));
	} catch {
		return -1;
	}
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const demoDir = mkdtempSync(join(tmpdir(), "chainlake-bench-demo-"));
const demo = spawn(process.execPath, ["--max-old-space-size=512", "--import", "tsx", "scripts/start.ts"], {
	env: {
		...process.env,
		PORT: values.port,
		CHAINLAKE_DEMO_DIR: demoDir,
		CHAINLAKE_DEMO_INTERVAL_MS: values["interval-ms"],
	},
	stdio: ["ignore", "pipe", "pipe"],
});
let out = "";
let err = "";
demo.stdout?.on("data", (c) => {
	out += c;
});
demo.stderr?.on("data", (c) => {
	err += c;
});
const exited = new Promise<number | null>((r) => demo.on("exit", (code) => r(code)));
try {
	while (!out.includes("Ctrl-C stops")) {
		if (demo.exitCode !== null) throw new Error(`the demo exited before serving:\n${err}`);
		await sleep(200);
	}
	const anvilUrl = /anvil RPC: +(\S+)/.exec(out)?.[1];
	const linesAtBanner = err.split("\n").filter(Boolean).length;
	const t0 = Date.now();
	const cpu0 = cpuSeconds(demo.pid as number);
	for (const mark of marks) {
		while (storedHead(demoDir) < mark) await sleep(500);
		const seconds = (Date.now() - t0) / 1000;
		const cpu = ((cpuSeconds(demo.pid as number) - cpu0) / seconds) * 100;
		process.stdout.write(
			`demo at block ${storedHead(demoDir)}: ${describe(walk(demoDir))}; RSS ${rssMb(demo.pid as number).toFixed(0)} MB; CPU ${cpu.toFixed(0)}% over ${seconds.toFixed(0)} s\n`,
		);
	}
	const top = storedHead(demoDir);
	const logLines = err.split("\n").filter(Boolean).length - linesAtBanner;
	process.stdout.write(`log lines after the banner: ${logLines} in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
	if (anvilUrl) {
		const backfillDir = mkdtempSync(join(tmpdir(), "chainlake-bench-demo-backfill-"));
		const r = spawnSync(
			process.execPath,
			[
				...["--import", "tsx", "scripts/backfill.ts", "--chain", CHAIN, "--rpc", anvilUrl],
				...["--from", "0", "--to", String(top), "--data-dir", backfillDir],
			],
			{ encoding: "utf8" },
		);
		process.stdout.write(`backfill of blocks 0..${top} (exit ${r.status}): ${describe(walk(backfillDir))}\n`);
		rmSync(backfillDir, { recursive: true, force: true });
	}
	const stopAt = performance.now();
	demo.kill("SIGINT");
	const code = await exited;
	const errorLines = err.split("\n").filter((l) => / ERROR /.test(l));
	process.stdout.write(
		`Ctrl-C (SIGINT): exit ${code} after ${(performance.now() - stopAt).toFixed(0)} ms, ${errorLines.length} ERROR lines${errorLines.length ? `:\n${errorLines.join("\n")}` : ""}\n`,
	);
} finally {
	if (demo.exitCode === null) demo.kill("SIGKILL");
	rmSync(demoDir, { recursive: true, force: true });
}
