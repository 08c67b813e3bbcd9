import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFollower } from "../../src/follow/follower.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { saveManifest } from "../../src/store/delta/save-manifest.js";
import { createParquetWriter } from "../../src/store/files/parquet-writer.js";
import { chainDir, partitionPath } from "../../src/store/format/layout.js";
import type { ChunkEntry } from "../../src/store/format/records.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { generateActivity } from "../../src/workload/activity.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { runScript } from "../helpers/cli.js";
import { checkDeltaLogs } from "../helpers/delta.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * The lake read by an engine we did not write: ClickHouse's Delta Lake reader (chdb, ClickHouse
 * embedded) reads every dataset, index and metadata table of a chain exactly as our API's
 * snapshot (DuckDB over the files the manifest lists): same rows, no more, no fewer, after a
 * backfill, appends, reorgs 1 and 3 blocks deep, a compaction, and a SIGKILL between two tables'
 * commits. Opt-in (`npm run test:engines`, or CHAINLAKE_ENGINES=1): chdb loads a 550 MB library.
 */
const ENABLED = process.env.CHAINLAKE_ENGINES === "1";
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const run = promisify(execFile);

let anvil: AnvilInstance;
let root: string;
let dataDir: string;
let accounts: string[];
let follower: ReturnType<typeof createFollower> | null = null;

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const send = (i: number) =>
	sendMined(anvil.url, {
		from: accounts[i % 3] as string,
		to: accounts[3 + (i % 3)] as string,
		value: `0x${(i + 1).toString(16)}`,
	});
const makeFollower = () =>
	createFollower({
		rpc: createRpcClient({ urls: [anvil.url], logger: createMemoryLogger() }),
		chain: parseChainId(CHAIN_ID),
		dataDir,
		logger: createMemoryLogger(),
		traces: "parity",
		finalityDepth: 6,
		partitionSize: 4,
		deleteGraceMs: 0,
	});

/** Every table's rows through chdb, by table folder. */
async function readWithChdb(
	dirs: string[],
): Promise<Record<string, { types: Record<string, string>; rows: unknown[] }>> {
	const { stdout } = await run(process.execPath, [join(import.meta.dirname, "chdb-read.mjs"), ...dirs], {
		cwd: "/",
		maxBuffer: 1 << 30,
	});
	return JSON.parse(stdout);
}

/** A value as text, whatever engine produced it: numbers, bigints and decimals by their digits. */
function canonical(v: unknown): unknown {
	if (v === null || v === undefined) return null;
	if (typeof v === "number" || typeof v === "bigint") return String(v);
	if (Array.isArray(v)) return v.map(canonical);
	if (typeof v === "object")
		return Object.fromEntries(
			Object.entries(v as Record<string, unknown>)
				.sort(([a], [b]) => (a < b ? -1 : 1))
				.map(([k, x]) => [k, canonical(x)]),
		);
	return String(v);
}

/** Rows as sorted canonical lines; ClickHouse reads a NULL list as [] (its arrays are not nullable). */
const lines = (rows: unknown[], lists: Set<string>) =>
	rows
		.map((r) =>
			JSON.stringify(
				canonical(
					Object.fromEntries(
						Object.entries(r as Record<string, unknown>).map(([k, v]) => [k, v == null && lists.has(k) ? [] : v]),
					),
				),
			),
		)
		.sort();

/** After each step: our own protocol check, then chdb's rows against DuckDB over the listed files. */
async function engineAgrees(step: string) {
	// The follower's background merges commit on their own: compare a still folder.
	await follower?.merges();
	const checked = await checkDeltaLogs(dataDir, CHAIN);
	expect(checked.problems, step).toEqual([]);
	const tables = Object.entries(checked.live).filter(([, files]) => files.length > 0);
	const read = await readWithChdb(tables.map(([t]) => join(chainDir(dataDir, CHAIN_ID), t)));
	const db = await DuckDBInstance.create(":memory:");
	const conn = await db.connect();
	try {
		for (const [table, files] of tables) {
			const ours = await conn.runAndReadAll(`SELECT * FROM read_parquet([${files.map((f) => `'${f}'`).join(", ")}])`);
			const lists = new Set(ours.columnNames().filter((_, i) => String(ours.columnTypes()[i]).endsWith("[]")));
			const theirs = read[join(chainDir(dataDir, CHAIN_ID), table)];
			expect(theirs, `${step}: ${table}`).toBeDefined();
			expect(theirs?.rows.length, `${step}: ${table} row count`).toBe(Number(ours.currentRowCount));
			expect(lines(theirs?.rows ?? [], lists), `${step}: ${table} rows`).toEqual(
				lines(ours.getRowObjectsJson(), lists),
			);
			// Signed integers only: Delta has no unsigned types, and every engine reads these alike.
			for (const type of Object.values(theirs?.types ?? {})) expect(type, `${step}: ${table}`).not.toMatch(/UInt/);
		}
	} finally {
		conn.closeSync();
		db.closeSync();
	}
	return checked;
}

beforeAll(async () => {
	if (!ENABLED) return;
	anvil = await startAnvil({ chainId: CHAIN });
	accounts = (await rpc("eth_accounts")) as string[];
	const workload = await runWorkload({ rpcUrl: anvil.url });
	await generateActivity({ rpcUrl: anvil.url, contracts: workload.contracts, blocks: 10, txsPerBlock: 5 });
	// Empty blocks after the activity, so the backfill's chunks settle and merge (runs.ts SETTLE_DEPTH).
	await rpc("anvil_mine", ["0x46"]);
	root = await mkdtemp(join(tmpdir(), "chainlake-engines-"));
	dataDir = join(root, "data");
});

afterAll(async () => {
	await follower?.stop();
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

describe.skipIf(!ENABLED)("the lake through ClickHouse's Delta Lake reader (chdb)", () => {
	it("reads a backfill exactly, merged chunks and runs included, removed files nowhere", async () => {
		await backfillInto(dataDir, anvil.url, CHAIN, { partitionSize: 4, traces: "parity" });
		const checked = await engineAgrees("backfill");
		// Merges removed files from the logs; they are still on disk (retention), and read by no one.
		const retained = Object.values(checked.removed).flat();
		expect(retained.length).toBeGreaterThan(0);
		for (const f of retained) expect(existsSync(f), f).toBe(true);
	});

	it("reads appends, reorgs 1 and 3 blocks deep and a compaction exactly", async () => {
		follower = makeFollower();
		for (let i = 0; i < 3; i++) await send(i);
		await follower.step();
		await engineAgrees("append");
		for (const depth of [1, 3]) {
			for (let i = 0; i < depth; i++) await send(10 + i);
			await follower.step();
			await rpc("anvil_reorg", [depth, []]);
			const events = await follower.step();
			expect(events.some((e) => e.type === "reorg")).toBe(true);
			await engineAgrees(`reorg ${depth}`);
		}
		// Past the finality depth: the one-block head files are compacted into partitions.
		for (let i = 0; i < 10; i++) await send(20 + i);
		const events = await follower.step();
		expect(JSON.stringify(events)).toContain("compact");
		await engineAgrees("compaction");
		await follower.stop();
		follower = null;
	});

	it("reads the state a follower SIGKILLed between two tables' commits leaves, once restarted", async () => {
		await follower?.stop();
		for (let i = 0; i < 3; i++) await send(40 + i);
		const crashed = await runScript(
			"follow.ts",
			["--follow", `${CHAIN_ID}=${anvil.url}`, "--data-dir", dataDir, "--finality-depth", "6", "--partition-size", "4"],
			{ CHAINLAKE_CRASH_AT: "delta.committed:2" },
		);
		expect(crashed.signal, crashed.stderr).toBe("SIGKILL");
		follower = makeFollower();
		await follower.step();
		await engineAgrees("after SIGKILL");
	});

	it("reads signed integers and exact decimals: a uint256 above 2^64 and the largest block nonce", async () => {
		const read = await readWithChdb([join(chainDir(dataDir, CHAIN_ID), "transfers")]);
		const transfers = Object.values(read)[0];
		expect(transfers?.types.block_number).toBe("Nullable(Int64)");
		const big = ((transfers?.rows ?? []) as { value: string | null }[]).filter(
			(r) => r.value != null && BigInt(r.value) > 2n ** 64n,
		);
		expect(big.length).toBeGreaterThan(0);

		// A PoW block with the largest nonce a header can carry, in a lake of its own.
		const own = join(root, "nonce");
		const writer = await createParquetWriter();
		const [block] = await writer.select(
			`SELECT * FROM read_parquet('${join(chainDir(dataDir, CHAIN_ID), "blocks")}/*.parquet') LIMIT 1`,
		);
		const chunk: ChunkEntry = {
			from: Number(block?.number),
			to: Number(block?.number),
			traces: "none",
			datasets: ["blocks"],
			rows: { blocks: 1 },
			first_parent_hash: String(block?.parent_hash),
			last_hash: String(block?.hash),
			gen: 1,
		};
		const row = JSON.parse(JSON.stringify(block, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
		row.nonce = "18446744073709551615";
		await writer.write("blocks", [row], partitionPath(own, CHAIN_ID, "blocks", chunk), join(own, "staging"));
		writer.close();
		await saveManifest(own, { version: 1, chain: CHAIN_ID, chain_number: CHAIN, chunks: [chunk] });
		const blocks = Object.values(await readWithChdb([join(chainDir(own, CHAIN_ID), "blocks")]))[0];
		expect(blocks?.types.nonce).toBe("Nullable(Decimal(20, 0))");
		expect((blocks?.rows[0] as { nonce: string } | undefined)?.nonce).toBe("18446744073709551615");
	});
});
