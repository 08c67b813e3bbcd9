import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { REPO_ROOT, runScript } from "../helpers/cli.js";
import { fileHashes } from "../helpers/compare.js";
import { nodeCall } from "../helpers/node-rpc.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";
import { folderState, readManifest, storedHeadOf } from "./folder.js";

/**
 * What an operator does: `kill <pid of npm run ...>` (SIGTERM to npm only) or Ctrl-C (SIGINT to
 * the terminal's whole process group). Through the real `npm run`, every process of the tree must
 * be gone within a few seconds, the data folder whole and tidy (nothing temporary, nothing
 * unlisted, the staging folder empty), and the lock free: the next run takes it at once.
 * (Before: npm → sh → tsx → node; npm forwarded SIGTERM to sh, which died and left tsx and node
 * running as orphans, holding the lock; and the backfill had no handler at all.)
 */
const CHAIN = "eip155-31337";
const STOP_WITHIN_MS = 5_000;
let anvil: AnvilInstance;
let slow: Awaited<ReturnType<typeof startRpcProxy>>;
let root: string;
const started: ChildProcess[] = [];

beforeAll(async () => {
	anvil = await startAnvil({ chainId: 31337 });
	await runWorkload({ rpcUrl: anvil.url });
	// A slow node, so that a run is still busy when the signal comes.
	slow = await startRpcProxy(anvil.url, { delayMs: 40 });
	root = await mkdtemp(join(tmpdir(), "chainlake-stop-"));
});
afterEach(() => {
	// A test that failed may leave its tree: its own process group, started detached below.
	for (const c of started.splice(0)) {
		try {
			if (c.pid) process.kill(-c.pid, "SIGKILL");
		} catch {}
	}
});
afterAll(async () => {
	await slow?.close();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

/** `npm run <script> -- <args>`, in a process group of its own (as a terminal would start it). */
function npmRun(script: string, args: string[]) {
	const child = spawn("npm", ["run", "--silent", script, "--", ...args], {
		cwd: REPO_ROOT,
		env: { ...process.env, NO_COLOR: "1" },
		stdio: ["ignore", "pipe", "pipe"],
		detached: true,
	});
	started.push(child);
	// stdout too: the API's log lines go there.
	let stderr = "";
	const add = (c: Buffer) => {
		stderr += c;
	};
	child.stderr?.on("data", add);
	child.stdout?.on("data", add);
	const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
		child.on("exit", (code, signal) => r({ code, signal })),
	);
	return { child, exited, stderr: () => stderr };
}

/** pid → [ppid, state] of every process, from /proc. */
function processTable(): Map<number, [number, string]> {
	const out = new Map<number, [number, string]>();
	for (const e of readdirSync("/proc")) {
		if (!/^\d+$/.test(e)) continue;
		try {
			// pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
			const stat = readFileSync(`/proc/${e}/stat`, "utf8");
			const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
			out.set(Number(e), [Number(ppid), state ?? "?"]);
		} catch {}
	}
	return out;
}

/** `pid` and all its descendants, with their command lines. */
function tree(pid: number): { pid: number; cmd: string }[] {
	const table = processTable();
	const found = [pid];
	for (let i = 0; i < found.length; i++)
		for (const [p, [pp]] of table) if (pp === found[i] && !found.includes(p)) found.push(p);
	return found.map((p) => {
		let cmd = "";
		try {
			cmd = readFileSync(`/proc/${p}/cmdline`, "utf8").replaceAll("\0", " ").trim();
		} catch {}
		return { pid: p, cmd };
	});
}

/** Those of `pids` still running (a zombie waiting for its parent counts as gone). */
function alive(pids: number[]): number[] {
	const table = processTable();
	return pids.filter((p) => table.has(p) && table.get(p)?.[1] !== "Z");
}

async function waitFor(what: string, ok: () => boolean, ms = 60_000) {
	const deadline = Date.now() + ms;
	while (!ok()) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 20));
	}
}

/** Sends `signal` (to npm only, or to its whole group like Ctrl-C); returns how long until every process of the tree was gone. */
async function stopTree(run: ReturnType<typeof npmRun>, signal: NodeJS.Signals, group: boolean) {
	const pid = run.child.pid as number;
	const procs = tree(pid);
	// npm and the script's own node process (no shell, no tsx wrapper in between; tsx may add esbuild).
	expect(procs.length, JSON.stringify(procs)).toBeGreaterThanOrEqual(2);
	expect(procs.filter((p) => /^(\/bin\/)?sh -c|\.bin\/tsx /.test(p.cmd))).toEqual([]);
	const sent = Date.now();
	process.kill(group ? -pid : pid, signal);
	const exit = await run.exited;
	await waitFor(
		`every process of the tree to end: ${JSON.stringify(procs)}`,
		() => alive(procs.map((p) => p.pid)).length === 0,
		STOP_WITHIN_MS * 2,
	);
	return { ms: Date.now() - sent, exit, procs };
}

const chunksIn = (dir: string) => readManifest(join(dir, CHAIN))?.chunks.length ?? 0;

/**
 * Nothing temporary, no unlisted data file, nothing missing; the staging folder holds no file;
 * every listed file reads as whole Parquet. A follower's clean stop may leave unlisted files: those
 * it replaced less than `--delete-grace-ms` ago, kept for readers, removed at the next start.
 */
async function assertTidy(dir: string, { retiredAllowed = false } = {}) {
	const s = folderState(join(dir, CHAIN));
	// Top-level `_` files are the folder's own (the lock, the manifest and its previous copy).
	const unlisted = retiredAllowed ? [] : s.unlisted.filter((f) => !/^_[^/]*$/.test(f));
	expect({ tmp: s.tmp, unlisted, missing: s.missing }, JSON.stringify(unlisted)).toEqual({
		tmp: [],
		unlisted: [],
		missing: [],
	});
	const staging = join(dir, CHAIN, "_staging");
	expect(existsSync(staging) ? readdirSync(staging) : []).toEqual([]);
	const db = await DuckDBInstance.create(":memory:");
	const conn = await db.connect();
	try {
		// Every listed Parquet file reads (key filters beside index files are not Parquet).
		for (const f of s.listed.filter((n) => n.endsWith(".parquet")))
			await conn.run(`SELECT count(*) FROM read_parquet('${join(dir, CHAIN, f)}')`);
	} finally {
		conn.closeSync();
		db.closeSync();
	}
	expect(s.listed.length).toBeGreaterThan(0);
}

const backfillArgs = (dir: string, rpc: string) => [
	...["--chain", CHAIN, "--rpc", rpc, "--from", "0", "--to", "33", "--data-dir", dir],
	...["--partition-size", "3", "--concurrency", "2", "--traces", "parity"],
];

describe("stopping the CLIs through npm run", () => {
	it("npm run follow: SIGTERM to npm stops the follower within seconds, lock free, folder whole", async () => {
		const dir = join(root, "follow");
		const head = Number(await nodeCall(anvil.url, "eth_blockNumber"));
		const run = npmRun("follow", [
			...["--follow", `${CHAIN}=${slow.url}`, "--data-dir", dir],
			...["--finality-depth", "3", "--poll-ms", "50", "--partition-size", "4"],
		]);
		// New blocks keep coming, so the follower is in the middle of a step when the signal lands.
		let mining = true;
		const miner = (async () => {
			while (mining) {
				await nodeCall(anvil.url, "evm_mine");
				await new Promise((r) => setTimeout(r, 150));
			}
		})();
		await waitFor("the follower to store the head", () => storedHeadOf(join(dir, CHAIN)) >= head);
		const { ms, exit, procs } = await stopTree(run, "SIGTERM", false);
		mining = false;
		await miner;
		expect(
			procs.some((p) => p.cmd.includes("scripts/follow.ts")),
			JSON.stringify(procs),
		).toBe(true);
		expect(ms).toBeLessThan(STOP_WITHIN_MS);
		expect(exit, run.stderr()).toEqual({ code: 0, signal: null });
		expect(run.stderr()).toContain("SIGTERM: stopping cleanly");
		expect(run.stderr()).toContain("stopped");
		await assertTidy(dir, { retiredAllowed: true });
		// The lock is free and what is stored is consistent: a backfill over it takes the lock and has nothing to fetch.
		const stored = folderState(join(dir, CHAIN)).storedHead;
		const again = await runScript("backfill.ts", [
			...["--chain", CHAIN, "--rpc", anvil.url, "--from", "0", "--to", String(stored), "--data-dir", dir],
		]);
		expect(again.code, again.stderr).toBe(0);
		expect(again.stderr).toContain("0 to fetch in 0 chunks");
		await assertTidy(dir);
	});

	it("npm run backfill: SIGTERM to npm stops after the chunk in progress (exit 143); the same command resumes", async () => {
		const clean = join(root, "clean");
		const r = await runScript("backfill.ts", backfillArgs(clean, anvil.url));
		expect(r.code, r.stderr).toBe(0);

		const dir = join(root, "backfill-term");
		const run = npmRun("backfill", backfillArgs(dir, slow.url));
		await waitFor("two chunks", () => chunksIn(dir) >= 2);
		const { ms, exit, procs } = await stopTree(run, "SIGTERM", false);
		expect(
			procs.some((p) => p.cmd.includes("scripts/backfill.ts")),
			JSON.stringify(procs),
		).toBe(true);
		expect(ms).toBeLessThan(STOP_WITHIN_MS);
		// npm passes the script's status on: 143 = 128 + SIGTERM.
		expect(exit.code, run.stderr()).toBe(143);
		expect(run.stderr()).toContain("stopped by SIGTERM");
		expect(chunksIn(dir)).toBeLessThan(12);
		await assertTidy(dir);

		const resumed = await runScript("backfill.ts", backfillArgs(dir, anvil.url));
		expect(resumed.code, resumed.stderr).toBe(0);
		// The same files and the same chunk list as a run never stopped.
		const parquet = (d: string) =>
			Object.fromEntries(Object.entries(fileHashes(join(d, CHAIN))).filter(([f]) => f.endsWith(".parquet")));
		expect(parquet(dir)).toEqual(parquet(clean));
		expect(folderState(join(dir, CHAIN)).manifest?.chunks).toEqual(folderState(join(clean, CHAIN)).manifest?.chunks);
	});

	it("npm run backfill: Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops cleanly (exit 130)", async () => {
		const dir = join(root, "backfill-int");
		const run = npmRun("backfill", backfillArgs(dir, slow.url));
		await waitFor("one chunk", () => chunksIn(dir) >= 1);
		const { ms, exit } = await stopTree(run, "SIGINT", true);
		expect(ms).toBeLessThan(STOP_WITHIN_MS);
		// One clean stop, not a forced exit (npm, in the same group, may pass the signal on once more).
		expect(run.stderr()).toContain("stopped by SIGINT");
		expect(run.stderr()).not.toContain("exiting at once");
		expect(exit.code ?? exit.signal, run.stderr()).toBeOneOf([130, "SIGINT"]);
		await assertTidy(dir);
		const resumed = await runScript("backfill.ts", backfillArgs(dir, anvil.url));
		expect(resumed.code, resumed.stderr).toBe(0);
	});

	it("npm run serve: SIGTERM to npm closes the server; the heap cap reaches the one node process", async () => {
		const dir = join(root, "serve");
		const run = npmRun("serve", ["--data-dir", dir, "--port", "0"]);
		await waitFor("the server to listen", () => run.stderr().includes("chainlake API on")).catch((err) => {
			throw new Error(`${(err as Error).message}:\n${run.stderr()}`);
		});
		const node = tree(run.child.pid as number).find((p) => p.cmd.includes("scripts/serve.ts"));
		expect(node?.cmd).toContain("--max-old-space-size=512");
		const { ms, exit } = await stopTree(run, "SIGTERM", false);
		expect(ms).toBeLessThan(STOP_WITHIN_MS);
		expect(exit, run.stderr()).toEqual({ code: 0, signal: null });
	});
});
