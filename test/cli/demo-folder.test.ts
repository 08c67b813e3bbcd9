/**
 * After `npm start`, the chain is in data/demo (CHAINLAKE_DEMO_DIR), but `npm run sql` and
 * `npm run serve` read data/ by default. When no folder is given and data/ holds no chain while
 * the demo's folder does, they read the demo's and say so (src/util/cli.ts readFolder says why);
 * a folder given is always the one read, and a writer (serve --follow) never falls back.
 * Each process runs in a folder of its own, so "data" is that folder's, not the repository's.
 */
import { cp, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { type CliResult, runScript, spawnScript } from "../helpers/cli.js";
import { nodeCall } from "../helpers/node-rpc.js";

let anvil: AnvilInstance;
let cwd: string;
const NO_DIR_ENV = { CHAINLAKE_DATA_DIR: undefined, CHAINLAKE_DEMO_DIR: undefined };
beforeAll(async () => {
	anvil = await startAnvil({ chainId: 31337 });
	for (let i = 0; i < 2; i++) await nodeCall(anvil.url, "evm_mine");
	cwd = await mkdtemp(join(tmpdir(), "chainlake-demo-dir-"));
	// What npm start leaves: data/ with the demo's folder and nothing else.
	await backfillInto(join(cwd, "data", "demo"), anvil.url, 31337);
}, 60_000);
afterAll(async () => {
	await anvil?.stop();
	await rm(cwd, { recursive: true, force: true });
});

/** serve's output until it listens (or exits), then stopped. */
async function serveUntilListening(args: string[], where = cwd): Promise<string> {
	const child = spawnScript("serve.ts", ["--port", "0", ...args], NO_DIR_ENV, { cwd: where });
	let out = "";
	const seen = new Promise<void>((resolve) => {
		const add = (c: Buffer) => {
			out += c;
			if (out.includes("chainlake API on")) resolve();
		};
		child.stdout?.on("data", add);
		child.stderr?.on("data", add);
		child.on("exit", () => resolve());
	});
	const closed = new Promise((r) => child.on("close", r));
	await seen;
	child.kill("SIGKILL");
	// What it wrote in the same tick as the listening line (the warnings) is still in the pipes.
	await closed;
	return out;
}

describe.concurrent("sql and serve after npm start", () => {
	it("sql with no folder given reads data/demo and says so", async () => {
		const r: CliResult = await runScript("sql.ts", ["-c", "SELECT count(*)::INT AS n FROM blocks"], NO_DIR_ENV, {
			cwd,
		});
		expect(r.code, r.stderr).toBe(0);
		expect(r.stderr).toContain(
			"no chain data under data/: reading the demo's folder data/demo (npm start); --data-dir chooses another",
		);
		// Blocks 0..2: the genesis and the two mined.
		expect(r.stdout).toMatch(/│\s+3\s+│/);
	});

	it("sql with --data-dir given reads that folder only, and names npm start", async () => {
		const r = await runScript("sql.ts", ["--data-dir", "data", "-c", "SELECT 1"], NO_DIR_ENV, { cwd });
		expect(r.code).toBe(2);
		expect(r.stderr).toContain("error: no chain data under data: run a backfill first (see README), or npm start");
		expect(r.stderr).not.toContain("demo's folder");
	});

	it("serve with no folder given serves the demo's chain and says so", async () => {
		const out = await serveUntilListening([]);
		expect(out).toContain("reading the demo's folder data/demo (npm start)");
		expect(out).toMatch(/chainlake API on http:\/\/127\.0\.0\.1:\d+: chains eip155-31337/);
	});

	it("serve with --data-dir given serves that folder, and says how to fill it when empty", async () => {
		const empty = join(cwd, "empty");
		await mkdir(empty);
		const out = await serveUntilListening(["--data-dir", empty]);
		expect(out).not.toContain("demo's folder");
		expect(out).toContain("chains none yet");
		expect(out).toContain(`no chain data under ${empty} yet: write some with npm run backfill`);
	});

	it("serve --follow writes to data/, never the demo's folder", async () => {
		// A folder of its own: the follower writes data/eip155-31337, which would end the others' fallback.
		const own = join(cwd, "follow");
		await cp(join(cwd, "data", "demo"), join(own, "data", "demo"), { recursive: true });
		const out = await serveUntilListening(["--follow", `eip155-31337=${anvil.url}`, "--poll-ms", "60000"], own);
		expect(out).not.toContain("demo's folder");
		expect(out).toMatch(/chainlake API on http:\/\/127\.0\.0\.1:\d+: chains (none yet|eip155-31337)/);
	});
});
