/**
 * The failures a user meets in the first hour, each through the real CLI process: a taken port, a
 * data folder that is a file or cannot be written, a dead node, a held write lock, an unknown
 * chain. Each must end in a sentence naming the cause and the fix, a non-zero exit, and no stack
 * (a stack line starts with "    at "), which `--debug` brings back.
 */
import { chmodSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve, sep } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireWriteLock } from "../../src/store/files/lock.js";
import { type CliResult, runScript } from "../helpers/cli.js";
import { deadUrl } from "../helpers/scripted-rpc.js";

const STACK = /^\s+at /m;
/** Debian's and most systems' unprivileged "nobody". */
const NOBODY = 65534;

/** The first folder from `/` down to `dir` that "nobody" may not enter (no execute bit for others), if any. */
function closedTo(dir: string): string | undefined {
	const parts = resolve(dir).split(sep).filter(Boolean);
	for (let i = 1; i <= parts.length; i++) {
		const d = `/${parts.slice(0, i).join("/")}`;
		if ((statSync(d).mode & 0o001) === 0) return d;
	}
	return undefined;
}

let root: string;
let held: Server;
let port: number;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), "chainlake-cli-fail-"));
	// mkdtemp makes its folder 0700: "nobody" must reach the read-only folder inside it.
	chmodSync(root, 0o755);
	held = createServer();
	await new Promise<void>((r) => held.listen(0, "127.0.0.1", r));
	port = (held.address() as { port: number }).port;
});
afterAll(async () => {
	await new Promise((r) => held?.close(r));
	await rm(root, { recursive: true, force: true });
});

/** One or two lines on stderr, no stack, the exit status given. */
function sentence(r: CliResult, code: number) {
	expect(r.code, r.stderr).toBe(code);
	expect(r.stderr).not.toMatch(STACK);
	expect(r.stderr.trim().split("\n").length, r.stderr).toBeLessThanOrEqual(2);
}

// Each case is its own processes and folders: run side by side, the file takes its slowest case.
describe.concurrent("the first hour's failures, in a sentence", () => {
	it("serve on a taken port names the port and the flag; --debug adds the stack", async () => {
		const empty = join(root, "serve-empty");
		mkdirSync(empty);
		const args = ["--data-dir", empty, "--port", String(port)];
		const [plain, debug] = await Promise.all([
			runScript("serve.ts", args),
			runScript("serve.ts", [...args, "--debug"]),
		]);
		sentence(plain, 1);
		expect(plain.stderr).toContain(`error: port ${port} on 127.0.0.1 is taken by another process`);
		expect(plain.stderr).toContain("stop that process, or pick another port with --port (or PORT)");
		expect(debug.code).toBe(1);
		expect(debug.stderr).toContain(`port ${port} on 127.0.0.1 is taken`);
		expect(debug.stderr).toMatch(STACK);
	});

	it("a data folder that is a file, or under one, names it and --data-dir", async () => {
		const file = join(root, "a-file");
		writeFileSync(file, "not a folder");
		const follow = (dir: string) => ["--data-dir", dir, "--follow", "eip155-31337=http://127.0.0.1:9"];
		const [isFile, underFile, reindex] = await Promise.all([
			runScript("follow.ts", follow(file)),
			runScript("follow.ts", follow(join(file, "data"))),
			runScript("reindex.ts", ["--data-dir", file, "--chain", "eip155-31337"]),
		]);
		// Whichever path was given, the sentence names the file in the way.
		for (const r of [isFile, underFile, reindex]) {
			sentence(r, 1);
			expect(r.stderr).toContain(`error: ${file} is a file, not a folder`);
			expect(r.stderr).toContain("point --data-dir (or CHAINLAKE_DATA_DIR) at a folder");
		}
	});

	it("serve and keys whose key file's folder is a file say that, not that the key file is damaged", async () => {
		const file = join(root, "keys-in-a-file");
		writeFileSync(file, "not a folder");
		const [serve, keys] = await Promise.all([
			runScript("serve.ts", ["--data-dir", file, "--port", "0"]),
			runScript("keys.ts", ["create", "--data-dir", file]),
		]);
		for (const r of [serve, keys]) {
			sentence(r, 1);
			expect(r.stderr).toContain(`error: ${file} is a file, not a folder`);
			expect(r.stderr).not.toContain("damaged");
		}
	});

	it("a folder the user may not write names it and --data-dir", async () => {
		const ro = join(root, "read-only");
		mkdirSync(ro);
		chmodSync(ro, 0o555);
		// As root (here, CI containers) no mode bit stops a write: the commands run as "nobody" then.
		const as = process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY } : {};
		// Otherwise nobody's node cannot even load the scripts, and fails on a module it cannot read.
		const closed = "uid" in as ? closedTo(process.cwd()) : undefined;
		if (closed)
			throw new Error(
				`run as root, this test runs its commands as nobody, who cannot enter ${closed}: chmod 755 it (README, "Tests"), or run npm test as another user`,
			);
		const [follow, reindex] = await Promise.all([
			runScript("follow.ts", ["--data-dir", ro, "--follow", "eip155-31337=http://127.0.0.1:9"], {}, as),
			runScript("reindex.ts", ["--data-dir", ro, "--chain", "eip155-31337"], {}, as),
		]);
		sentence(follow, 1);
		expect(follow.stderr).toContain(`error: cannot write ${ro}: permission denied`);
		expect(follow.stderr).toContain("pick a folder you can write with --data-dir (or CHAINLAKE_DATA_DIR)");
		sentence(reindex, 1);
		expect(reindex.stderr).toContain(`error: cannot write ${join(ro, "eip155-31337")}: permission denied`);
	});

	it("backfill at a dead node says so, with the fix, after a few seconds of retries", async () => {
		// --verbose logs each retry's wait: their sum is the time the user waits for the sentence,
		// measured free of this machine's load (the process's own start-up is not in it).
		const r = await runScript("backfill.ts", [
			...["--chain", "eip155-31337", "--rpc", await deadUrl(), "--from", "0", "--to", "1"],
			...["--data-dir", join(root, "dead"), "--verbose"],
		]);
		expect(r.code, r.stderr).toBe(1);
		expect(r.stderr).not.toMatch(STACK);
		const failure = r.stderr.trim().split("\n").slice(-2);
		expect(failure[0]).toMatch(/^error \[RPC_UNREACHABLE\]: eth_chainId failed after 6 attempts at .*cannot connect/);
		expect(failure[1]).toContain("check that the node is running and that its URL");
		const waits = [...r.stderr.matchAll(/retrying in (\d+) ms/g)].map((m) => Number(m[1]));
		// 6 attempts, 5 waits: none after the last (nothing follows it but the error).
		expect(waits).toHaveLength(5);
		expect(waits.reduce((a, b) => a + b, 0)).toBeLessThan(15_000);
	});

	it("follow and serve --follow at a dead node say so and exit, instead of retrying in the background", async () => {
		const url = await deadUrl();
		const runs = await Promise.all(
			["follow.ts", "serve.ts"].map((script) =>
				runScript(script, [
					...["--follow", `eip155-31337=${url}`, "--data-dir", join(root, `dead-${script}`)],
					...(script === "serve.ts" ? ["--port", "0"] : []),
				]),
			),
		);
		for (const r of runs) {
			expect(r.code, r.stderr).toBe(1);
			expect(r.stderr).not.toMatch(STACK);
			const failure = r.stderr.trim().split("\n").slice(-2);
			expect(failure[0]).toMatch(/^error \[RPC_UNREACHABLE\]: eth_chainId failed after 6 attempts at .*cannot connect/);
			expect(failure[1]).toContain("check that the node is running and that its URL");
		}
	});

	it("a chain folder another run is writing names the holder", async () => {
		const dir = join(root, "locked");
		const unlock = await acquireWriteLock(join(dir, "eip155-31337"));
		try {
			const r = await runScript("reindex.ts", ["--data-dir", dir, "--chain", "eip155-31337"]);
			sentence(r, 1);
			expect(r.stderr).toContain(
				`error [DATA_DIR_LOCKED]: another run (pid ${process.pid}) is writing ${join(dir, "eip155-31337")}`,
			);
		} finally {
			unlock();
		}
	});

	it("an unknown or malformed chain is a usage error (exit 2)", async () => {
		const dir = join(root, "one-chain");
		mkdirSync(join(dir, "eip155-1"), { recursive: true });
		const [sql, reindex] = await Promise.all([
			runScript("sql.ts", ["--data-dir", dir, "--chain", "eip155-5", "-c", "SELECT 1"]),
			runScript("reindex.ts", ["--data-dir", dir, "--chain", "mainnet"]),
		]);
		sentence(sql, 2);
		expect(sql.stderr).toContain(`error: no chain eip155-5 under ${dir} (found: eip155-1)`);
		sentence(reindex, 2);
		expect(reindex.stderr).toContain("mainnet");
		expect(reindex.stderr).toContain("eip155-");
	});
});
