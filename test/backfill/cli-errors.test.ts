import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runScript } from "../helpers/cli.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";
import { deadUrl } from "../helpers/scripted-rpc.js";

let anvil: AnvilInstance;
let root: string;
beforeAll(async () => {
	anvil = await startAnvil({ chainId: 31337 });
	for (let i = 0; i < 3; i++)
		await fetch(anvil.url, {
			method: "POST",
			body: '{"jsonrpc":"2.0","id":1,"method":"evm_mine","params":[]}',
			headers: { "content-type": "application/json" },
		});
	root = await mkdtemp(join(tmpdir(), "chainlake-cli-"));
});
afterAll(async () => {
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

const dataDir = (name: string) => join(root, name);
const backfill = (dir: string, ...args: string[]) => runScript("backfill.ts", ["--data-dir", dir, ...args]);

function parquetFiles(dir: string): string[] {
	if (!existsSync(dir)) return [];
	return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".parquet"));
}

// Side by side: each case has a folder of its own and only reads the node, and most of the file's
// time was one case waiting out the retries at a dead node while the cores sat idle.
describe.concurrent("backfill CLI: bad input gets a clear message, a non-zero exit and no files", () => {
	it("--from after --to", async () => {
		const dir = dataDir("range");
		const r = await backfill(dir, "--chain", "eip155-31337", "--rpc", anvil.url, "--from", "10", "--to", "5");
		expect(r.code).toBe(2);
		expect(r.stderr).toContain("--from (10) is after --to (5)");
		expect(existsSync(dir)).toBe(false);
	});

	it("malformed flags name the flag to fix", async () => {
		const r = await backfill(dataDir("flags"), "--chain", "mainnet", "--rpc", anvil.url, "--from", "x", "--to", "5");
		expect(r.code).toBe(2);
		expect(r.stderr).toContain("is not of the form eip155-<chain number>");
		expect(r.stderr).toContain("--from must be a block number");
		expect(r.stderr).toContain("usage: npm run backfill");
	});

	it("an unreachable RPC", async () => {
		const dir = dataDir("dead");
		const r = await backfill(dir, "--chain", "eip155-31337", "--rpc", await deadUrl(), "--from", "0", "--to", "1");
		expect(r.code).toBe(1);
		expect(r.stderr).toMatch(/RPC_UNREACHABLE.*cannot connect/);
		expect(existsSync(dir)).toBe(false);
	});

	it("a node of another chain", async () => {
		const dir = dataDir("chain");
		const r = await backfill(dir, "--chain", "eip155-1", "--rpc", anvil.url, "--from", "0", "--to", "1");
		expect(r.code).toBe(2);
		expect(r.stderr).toContain("the node serves chain 31337 (eip155-31337), not eip155-1");
		expect(existsSync(dir)).toBe(false);
	});

	it("a range past the node's head", async () => {
		const dir = dataDir("head");
		const r = await backfill(dir, "--chain", "eip155-31337", "--rpc", anvil.url, "--from", "0", "--to", "999999");
		expect(r.code).toBe(2);
		expect(r.stderr).toContain("past the node's head");
		expect(parquetFiles(dir)).toEqual([]);
	});

	it("explicit --traces parity on a node without trace support stops before writing", async () => {
		const proxy = await startRpcProxy(anvil.url, { refuse: ["trace_block", "debug_traceBlockByNumber"] });
		try {
			const dir = dataDir("notrace-explicit");
			const r = await backfill(
				dir,
				"--chain",
				"eip155-31337",
				"--rpc",
				proxy.url,
				"--from",
				"0",
				"--to",
				"latest",
				"--traces",
				"parity",
			);
			expect(r.code).toBe(2);
			expect(r.stderr).toContain("the node does not serve parity traces");
			expect(parquetFiles(dir)).toEqual([]);
		} finally {
			await proxy.close();
		}
	});

	it("--traces auto on a node without traces warns and marks the trace datasets unavailable", async () => {
		const proxy = await startRpcProxy(anvil.url, {
			refuse: ["trace_block", "debug_traceBlockByNumber", "eth_getBlockReceipts"],
		});
		try {
			const dir = dataDir("notrace-auto");
			const r = await backfill(dir, "--chain", "eip155-31337", "--rpc", proxy.url, "--from", "0", "--to", "latest");
			expect(r.code).toBe(0);
			expect(r.stderr).toContain("WARN the node serves neither trace_block nor debug_traceBlockByNumber");
			const manifest = JSON.parse(readFileSync(join(dir, "eip155-31337", "_manifest.json"), "utf8"));
			expect(manifest.chunks.map((c: { traces: string }) => c.traces)).toEqual(["none"]);
			expect(manifest.chunks[0].datasets).toEqual(["blocks", "transactions", "logs", "transfers"]);
			const files = parquetFiles(join(dir, "eip155-31337"));
			expect(files.some((f) => f.startsWith("traces"))).toBe(false);
			expect(files.some((f) => f.startsWith("contract_creations"))).toBe(false);
			expect(files.filter((f) => f.startsWith("blocks/"))).toHaveLength(1);
		} finally {
			await proxy.close();
		}
	});
});
