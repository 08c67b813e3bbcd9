import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATASETS } from "../../src/extract/rows.js";
import { indexesFor } from "../../src/store/format/indexes.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { seededRandom } from "../crash/seeded.js";
import { runScript, spawnScript } from "../helpers/cli.js";
import { fileHashes } from "../helpers/compare.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";

/**
 * SIGKILL the backfill CLI in the middle of a run (several times, at moments drawn from a seeded
 * PRNG: CHAINLAKE_CRASH_SEED repeats a run's), run it again, and compare the data folder byte for
 * byte with a clean run's. test/crash/ crashes at each named point of the write path; this one
 * kills from outside at arbitrary moments, fetches in flight included.
 */
const CHAIN = "eip155-31337";
let anvil: AnvilInstance;
let slow: Awaited<ReturnType<typeof startRpcProxy>>;
let root: string;

beforeAll(async () => {
	anvil = await startAnvil({ chainId: 31337 });
	await runWorkload({ rpcUrl: anvil.url });
	// A slow node, so that a run lasts long enough to be interrupted at chosen points.
	slow = await startRpcProxy(anvil.url, { delayMs: 40 });
	root = await mkdtemp(join(tmpdir(), "chainlake-crash-"));
});
afterAll(async () => {
	await slow?.close();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

const args = (dir: string, rpc: string) => [
	...["--chain", CHAIN, "--rpc", rpc, "--from", "0", "--to", "33", "--data-dir", dir],
	...["--partition-size", "3", "--concurrency", "2", "--traces", "parity"],
];

function chunksWritten(dir: string): number {
	try {
		return JSON.parse(readFileSync(join(dir, CHAIN, "_manifest.json"), "utf8")).chunks.length;
	} catch {
		return 0;
	}
}

/** Starts the CLI and SIGKILLs it once `chunks` chunks are recorded (plus a little more work). */
async function killAfter(dir: string, chunks: number, extraMs: number): Promise<number> {
	const child = spawnScript("backfill.ts", args(dir, slow.url));
	const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
	const started = Date.now();
	while (chunksWritten(dir) < chunks && Date.now() - started < 60_000) await new Promise((r) => setTimeout(r, 10));
	await new Promise((r) => setTimeout(r, extraMs));
	child.kill("SIGKILL");
	await exited;
	return chunksWritten(dir);
}

describe("crash and resume", () => {
	it("a run killed at several points, then resumed, leaves the same files as a clean run", async () => {
		const clean = join(root, "clean");
		const r = await runScript("backfill.ts", args(clean, anvil.url));
		expect(r.code, r.stderr).toBe(0);
		const expected = fileHashes(join(clean, CHAIN));
		// 12 chunks, each with 7 dataset files and every index file (the chain is too short for any
		// chunk to settle: no run or merge, and the balance indexes of chunks not settled are
		// derived when nothing else is due), block 0's token metadata tables (the node's funded
		// accounts), and the holder ranks and wallet records of every chunk (no follower keeps the
		// folder), one file each.
		expect(Object.keys(expected).filter((f) => f.endsWith(".parquet")).length).toBe(
			12 * (7 + indexesFor(DATASETS).length) + 3 + 2,
		);

		const crashed = join(root, "crashed");
		const rand = seededRandom("crash-resume");
		const seen: number[] = [];
		for (const chunks of [1, 3, 6]) {
			seen.push(await killAfter(crashed, chunks, rand.int(0, 80)));
		}
		// Each kill landed mid-run: some chunks written, not all.
		expect(seen.every((n) => n > 0 && n < 12)).toBe(true);
		expect(seen).toEqual([...seen].sort((a, b) => a - b));

		// Leftovers a crash can leave: a temporary file, and a renamed file its manifest never listed.
		writeFileSync(join(crashed, CHAIN, "logs", "logs_000000000030_000000000032_00000000.parquet.tmp"), "half a file");
		writeFileSync(join(crashed, CHAIN, "transfers", "transfers_000000000033_000000000033_00000000.parquet"), "orphan");

		const resumed = await runScript("backfill.ts", args(crashed, slow.url));
		expect(resumed.code, resumed.stderr).toBe(0);
		// The two planted files, and whatever the last kill left half-written.
		const removed = Number(/removed (\d+) files of an interrupted run/.exec(resumed.stderr)?.[1]);
		expect(removed, resumed.stderr).toBeGreaterThanOrEqual(2);
		expect(fileHashes(join(crashed, CHAIN))).toEqual(expected);
	});

	it("re-running a written range fetches nothing and changes nothing", async () => {
		const clean = join(root, "clean");
		const before = fileHashes(join(clean, CHAIN));
		slow.calls.length = 0;
		const r = await runScript("backfill.ts", args(clean, slow.url));
		expect(r.code, r.stderr).toBe(0);
		expect(r.stderr).toContain("0 to fetch in 0 chunks");
		expect(slow.calls.filter((m) => m === "eth_getBlockByNumber")).toEqual([]);
		expect(fileHashes(join(clean, CHAIN))).toEqual(before);
	});
});
