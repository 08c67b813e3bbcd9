/**
 * `npm run cluster -- --processes 2 [--follow eip155-1=<rpc url>] [--data-dir data] [--port 8080]`:
 * a local try of the scaled-out service (README "Scaling out"): one writer (`npm run follow`
 * with its status port, when --follow is given), N API processes (`npm run serve`, ports
 * port+1..port+N) over the same data folder, and HAProxy on --port in front of them, configured
 * by src/cluster/haproxy-config.ts. Passed on: --finality-depth, --poll-ms, --partition-size to
 * the writer; --memory-limit and --threads (each API process's DuckDB, default 2GB and 1),
 * --rate-limit and --query-timeout-ms to the API processes; --status-port (default port+100) to the writer.
 * --haproxy <path>: the binary (default `haproxy`, Debian's package). SIGINT/SIGTERM stop them all;
 * if one of them exits on its own, the others are stopped and this exits 1.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { haproxyConfig } from "../src/cluster/haproxy-config.js";
import { DEFAULT_MEMORY_LIMIT } from "../src/query/store/store-options.js";
import { startCli, usageError } from "../src/util/cli.js";
import { onStopSignal } from "../src/util/stop-signals.js";

const USAGE = `usage: npm run cluster -- [--processes 2] [--follow eip155-<n>=<rpc url> ...] [--data-dir data] [--port 8080] [flags]
  --processes <n>         API processes (npm run serve) behind HAProxy (default 2)
  --port <n>              HAProxy's port; the API processes take port+1..port+N (default 8080)
  --host <addr>           HAProxy's address (default 127.0.0.1)
  --data-dir <dir>        the lake's folder, shared by all (CHAINLAKE_DATA_DIR; default data)
  --follow <chain>=<url>  start a writer (npm run follow) for this chain (repeatable)
  --status-port <n>       the writer's status port (default port+100)
  --finality-depth <n>    passed to the writer (its default 12)
  --poll-ms <n>           passed to the writer (its default 1000)
  --partition-size <n>    passed to the writer (its default 1000)
  --memory-limit <size>   each API process's DuckDB memory (default ${DEFAULT_MEMORY_LIMIT})
  --threads <n>           each API process's DuckDB threads a query (serve's default 1)
  --rate-limit <n>        passed to the API processes (serve's default 50)
  --query-timeout-ms <n>  passed to the API processes (serve's default 10000)
  --haproxy <path>        the HAProxy binary (default haproxy, Debian's package)`;

const argv = startCli({ usage: USAGE });
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const options = {
	processes: { type: "string", default: "2" },
	port: { type: "string", default: "8080" },
	host: { type: "string", default: "127.0.0.1" },
	"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR ?? "data" },
	follow: { type: "string", multiple: true },
	"status-port": { type: "string" },
	"finality-depth": { type: "string" },
	"poll-ms": { type: "string" },
	"partition-size": { type: "string" },
	"memory-limit": { type: "string", default: DEFAULT_MEMORY_LIMIT },
	"rate-limit": { type: "string" },
	"query-timeout-ms": { type: "string" },
	threads: { type: "string" },
	haproxy: { type: "string", default: "haproxy" },
} as const;
const { values } = parseArgs({ args: argv, options });
const processes = Number(values.processes);
const port = Number(values.port);
if (!Number.isInteger(processes) || processes < 1 || processes > 64)
	usageError(`--processes must be a whole number from 1 to 64, got ${values.processes}`);
if (!Number.isInteger(port) || port < 1 || port + Math.max(processes, 100) > 65535)
	usageError(`--port must leave room for the API processes after it (1-65435), got ${values.port}`);
const host = values.host as string;
const dataDir = values["data-dir"] as string;
/** `--name value` for each option given. */
const pass = (...names: (keyof typeof options)[]) =>
	names.flatMap((n) => (values[n] === undefined ? [] : [`--${n}`, String(values[n])]));

const children: { name: string; child: ChildProcess }[] = [];
let stopping = false;
function start(name: string, command: string, args: readonly string[]) {
	const child = spawn(command, [...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
	const prefix = (chunk: Buffer, to: NodeJS.WriteStream) => {
		for (const line of chunk.toString().split("\n")) if (line) to.write(`[${name}] ${line}\n`);
	};
	child.stdout?.on("data", (c: Buffer) => prefix(c, process.stdout));
	child.stderr?.on("data", (c: Buffer) => prefix(c, process.stderr));
	child.on("error", (err) => {
		// The one program of the cluster not from npm: say how to get it.
		const hint =
			(err as NodeJS.ErrnoException).code === "ENOENT"
				? ": install it (apt-get install haproxy) or name it with --haproxy <path>"
				: "";
		process.stderr.write(`[${name}] could not start ${command}: ${err.message}${hint}\n`);
		void stopAll(1);
	});
	child.on("exit", (code, signal) => {
		if (stopping) return;
		process.stderr.write(`[${name}] exited (${signal ?? `code ${code}`}); stopping the others\n`);
		void stopAll(1);
	});
	children.push({ name, child });
}
/** A script run as its npm script runs it (`serve` with its heap cap, package.json). */
const script = (file: string, args: string[], node: string[] = []) =>
	[process.execPath, [...node, "--import", "tsx", `scripts/${file}`, ...args]] as const;

const config = mkdtempSync(join(tmpdir(), "chainlake-haproxy-"));
async function stopAll(code: number) {
	if (stopping) return;
	stopping = true;
	// HAProxy first (no new requests), then the API processes, then the writer.
	for (const { child } of [...children].reverse()) {
		if (child.exitCode === null && child.signalCode === null) {
			child.kill("SIGTERM");
			await new Promise((r) => child.once("exit", r));
		}
	}
	rmSync(config, { recursive: true, force: true });
	process.exit(code);
}

if (values.follow?.length) {
	const statusPort = values["status-port"] ?? String(port + 100);
	start(
		"writer",
		...script("follow.ts", [
			...values.follow.flatMap((f) => ["--follow", f]),
			...["--data-dir", dataDir, "--status-port", statusPort],
			...pass("finality-depth", "poll-ms", "partition-size"),
		]),
	);
	process.stdout.write(`writer: status on http://127.0.0.1:${statusPort}/readyz\n`);
}
const readers = Array.from({ length: processes }, (_, i) => ({ host: "127.0.0.1", port: port + 1 + i }));
for (const [i, r] of readers.entries())
	start(
		`reader${i + 1}`,
		...script(
			"serve.ts",
			[
				...["--data-dir", dataDir, "--port", String(r.port), "--host", r.host],
				...pass("memory-limit", "rate-limit", "query-timeout-ms", "threads"),
			],
			["--max-old-space-size=512"],
		),
	);
const cfg = join(config, "haproxy.cfg");
writeFileSync(cfg, haproxyConfig({ bind: { host, port }, readers }));
// -db: stay in the foreground, logs to stderr; -W would fork a master.
start("haproxy", values.haproxy as string, ["-f", cfg, "-db"]);
process.stdout.write(
	`${processes} API processes on ports ${readers[0]?.port}-${readers.at(-1)?.port}; HAProxy on http://${host}:${port} (config ${cfg})\n`,
);
onStopSignal(
	() => stopAll(0),
	(line) => process.stdout.write(`${line}\n`),
);
