import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTable, writeCommit } from "../../src/store/delta/delta-log.js";
import { deltaType, UnsupportedTypeError } from "../../src/store/delta/delta-types.js";
import { DEFAULT_LAKE, lakeExporter, liveFiles } from "../../src/store/delta/lake-export.js";
import { lakeFlags } from "../../src/store/delta/lake-flags.js";
import { lakeExportStatus, saveManifest } from "../../src/store/delta/save-manifest.js";
import { chainDir } from "../../src/store/format/layout.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { SETTLE_DEPTH } from "../../src/store/format/run-lookup.js";
import { generateActivity } from "../../src/workload/activity.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { runScript } from "../helpers/cli.js";
import { checkDeltaLogs } from "../helpers/delta.js";
import { nodeCall } from "../helpers/node-rpc.js";

/**
 * The Delta Lake logs against PROTOCOL.md and the manifest, read by a checker of our own
 * (test/helpers/delta.ts): required fields, no version gaps, checkpoints equal to the replayed
 * log, statistics equal to each file's true ones, every table listing exactly the API's files.
 * Then the exporter's own promises: idempotent, commits never overwritten, merges recorded as
 * `dataChange: false`, removed files kept for the retention and then vacuumed (and recorded),
 * and the final-only option. (ClickHouse reading the same logs: test/engines, opt-in.)
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
let anvil: AnvilInstance;
let root: string;
let dataDir: string;

const commits = (table: string) =>
	readdirSync(join(chainDir(dataDir, CHAIN_ID), table, "_delta_log"))
		.filter((n) => /^\d{20}\.json$/.test(n))
		.sort();
const actionsOf = (table: string, name: string) =>
	readFileSync(join(chainDir(dataDir, CHAIN_ID), table, "_delta_log", name), "utf8")
		.split("\n")
		.filter(Boolean)
		.map((l) => JSON.parse(l) as Record<string, Record<string, unknown>>);
const allCommits = () =>
	readdirSync(chainDir(dataDir, CHAIN_ID)).flatMap((t) => {
		const log = join(chainDir(dataDir, CHAIN_ID), t, "_delta_log");
		return existsSync(log) ? readdirSync(log).map((n) => join(t, n)) : [];
	});

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	const workload = await runWorkload({ rpcUrl: anvil.url });
	await generateActivity({ rpcUrl: anvil.url, contracts: workload.contracts, blocks: 8, txsPerBlock: 4 });
	await nodeCall(anvil.url, "anvil_mine", ["0x46"]);
	root = await mkdtemp(join(tmpdir(), "chainlake-delta-"));
	dataDir = join(root, "data");
	await backfillInto(dataDir, anvil.url, CHAIN, { partitionSize: 4, traces: "parity" });
});

afterAll(async () => {
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("the Delta Lake logs of a backfilled chain", () => {
	it("follow the protocol and list exactly the files the API reads, with exact statistics", async () => {
		const checked = await checkDeltaLogs(dataDir, CHAIN);
		expect(checked.problems).toEqual([]);
		expect(Object.keys(checked.live)).toEqual(
			expect.arrayContaining(["blocks", "transfers", "erc20_holders", "token_metadata"]),
		);
		// Versions past the interval have a checkpoint, named by _last_checkpoint.
		const log = join(chainDir(dataDir, CHAIN_ID), "blocks", "_delta_log");
		const last = JSON.parse(readFileSync(join(log, "_last_checkpoint"), "utf8")) as { version: number; size: number };
		expect(last.version % 10).toBe(0);
		expect(existsSync(join(log, `${String(last.version).padStart(20, "0")}.checkpoint.parquet`))).toBe(true);
	});

	it("record merges as remove + add with dataChange false, and keep the removed files on disk", async () => {
		const optimize = commits("blocks")
			.map((n) => actionsOf("blocks", n))
			.filter((a) => a[0]?.commitInfo?.operation === "OPTIMIZE");
		expect(optimize.length).toBeGreaterThan(0);
		for (const actions of optimize) {
			const changes = actions.filter((a) => "add" in a || "remove" in a);
			expect(changes.some((a) => "remove" in a) && changes.some((a) => "add" in a)).toBe(true);
			for (const a of changes) expect((a.add ?? a.remove)?.dataChange).toBe(false);
		}
		const { removed } = await checkDeltaLogs(dataDir, CHAIN);
		const files = Object.values(removed).flat();
		expect(files.length).toBeGreaterThan(0);
		for (const f of files) expect(existsSync(f), f).toBe(true);
	});

	it("carry the manifest generation in a txn action, and export nothing twice", async () => {
		const m = await loadManifest(dataDir, CHAIN_ID, CHAIN);
		const newest = commits("blocks").at(-1) as string;
		const txn = actionsOf("blocks", newest).find((a) => "txn" in a)?.txn;
		expect(txn).toMatchObject({ appId: "chainlake" });
		expect(Number(txn?.version)).toBeLessThanOrEqual(m.generation ?? 0);
		const before = allCommits();
		await lakeExporter(chainDir(dataDir, CHAIN_ID)).export(m);
		expect(allCommits()).toEqual(before);
	});

	it("never overwrite a commit: a second writer of the same version is refused", async () => {
		const dir = join(chainDir(dataDir, CHAIN_ID), "blocks");
		const name = commits("blocks").at(-1) as string;
		const text = readFileSync(join(dir, "_delta_log", name), "utf8");
		expect(await writeCommit(dir, Number(name.slice(0, 20)), [{ commitInfo: { operation: "intruder" } }])).toBe(false);
		expect(readFileSync(join(dir, "_delta_log", name), "utf8")).toBe(text);
		expect(readdirSync(join(dir, "_delta_log")).filter((n) => n.endsWith(".tmp"))).toEqual([]);
	});

	it("after a crash mid-checkpoint: readers skip its hidden temporary files, the next writer removes them", async () => {
		const log = join(chainDir(dataDir, CHAIN_ID), "blocks", "_delta_log");
		// What a SIGKILL between the checkpoint's COPY and its rename leaves (delta-log.ts writeCheckpoint).
		const left = [".00000000000000000999.checkpoint.parquet.tmp", ".00000000000000000999.checkpoint.parquet.ndjson"];
		for (const n of left) writeFileSync(join(log, n), "cut short");
		expect((await checkDeltaLogs(dataDir, CHAIN)).problems).toEqual([]);
		// A writer's start (here a backfill with nothing to fetch) brings the logs up to date first.
		const head = Number(await nodeCall(anvil.url, "eth_blockNumber"));
		const r = await runScript("backfill.ts", [
			...["--chain", CHAIN_ID, "--rpc", anvil.url, "--from", "0", "--to", String(head)],
			...["--data-dir", dataDir, "--partition-size", "4", "--traces", "parity"],
		]);
		expect(r.code).toBe(0);
		expect(readdirSync(log).filter((n) => n.startsWith("."))).toEqual([]);
		expect((await checkDeltaLogs(dataDir, CHAIN)).problems).toEqual([]);
	});

	it("count a failed export (for /readyz and /metrics), retried and cleared at the next save", async () => {
		const m = await loadManifest(dataDir, CHAIN_ID, CHAIN);
		const log = join(chainDir(dataDir, CHAIN_ID), "blocks", "_delta_log");
		const before = lakeExportStatus(dataDir, CHAIN_ID)?.failures ?? 0;
		// The blocks table's log cannot be read: the save stands, its export fails.
		renameSync(log, `${log}.aside`);
		writeFileSync(log, "not a folder");
		try {
			await saveManifest(dataDir, m);
			expect(lakeExportStatus(dataDir, CHAIN_ID)).toMatchObject({
				failures: before + 1,
				problem: { message: expect.stringContaining("blocks") },
			});
			// Kept by folder: another folder of the same chain in this process has its own.
			expect(lakeExportStatus(`${dataDir}-other`, CHAIN_ID)).toBeUndefined();
		} finally {
			rmSync(log);
			renameSync(`${log}.aside`, log);
		}
		await saveManifest(dataDir, m);
		expect(lakeExportStatus(dataDir, CHAIN_ID)).toEqual({ failures: before + 1, problem: null });
		expect((await checkDeltaLogs(dataDir, CHAIN)).problems).toEqual([]);
	});

	it("export only final blocks when asked, and all of them again when not", async () => {
		const m = await loadManifest(dataDir, CHAIN_ID, CHAIN);
		const tip = Math.max(...m.chunks.map((c) => c.to));
		const exporter = lakeExporter(chainDir(dataDir, CHAIN_ID));
		m.lake = { ...m.lake, final_only: true };
		await exporter.export(m);
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		try {
			const state = await readTable(conn, join(chainDir(dataDir, CHAIN_ID), "blocks"));
			const tops = [...state.adds.values()].map((a) => Number(a.tags.to));
			expect(Math.max(...tops)).toBeLessThanOrEqual(tip - SETTLE_DEPTH);
			expect(Math.max(...tops)).toBeGreaterThan(0);
			m.lake = { ...m.lake, final_only: false };
			await exporter.export(m);
			expect((await checkDeltaLogs(dataDir, CHAIN)).problems).toEqual([]);
		} finally {
			conn.closeSync();
			db.closeSync();
		}
	});

	it("vacuum removed files once the retention has passed, recorded in the log", async () => {
		const m = await loadManifest(dataDir, CHAIN_ID, CHAIN);
		const { removed, live } = await checkDeltaLogs(dataDir, CHAIN);
		const retained = Object.values(removed).flat();
		expect(retained.length).toBeGreaterThan(0);
		const retentionMs = (m.lake?.retention_minutes ?? 360) * 60_000;
		// When the tombstones were written (not the clock now: on a loaded machine the backfill that
		// wrote them may have ended more than a minute before this test runs).
		const deleted = Object.keys(removed).flatMap((table) =>
			commits(table).flatMap((n) =>
				actionsOf(table, n).flatMap((a) => (a.remove ? [Number(a.remove.deletionTimestamp)] : [])),
			),
		);
		// Just inside the retention of the first: nothing goes.
		await lakeExporter(chainDir(dataDir, CHAIN_ID)).export(m, Math.min(...deleted) + retentionMs - 1000);
		for (const f of retained) expect(existsSync(f), f).toBe(true);
		await lakeExporter(chainDir(dataDir, CHAIN_ID)).export(m, Math.max(...deleted) + retentionMs + 1000);
		for (const f of retained) expect(existsSync(f), f).toBe(false);
		for (const f of Object.values(live).flat()) expect(existsSync(f), f).toBe(true);
		const vacuums = commits("blocks").filter((n) => actionsOf("blocks", n)[0]?.commitInfo?.operation === "VACUUM END");
		expect(vacuums.length).toBe(1);
		expect((await checkDeltaLogs(dataDir, CHAIN)).problems).toEqual([]);
	});
});

describe("Delta types and flags", () => {
	it("maps the store's column types, and refuses unsigned ones with the way out", () => {
		expect(deltaType('STRUCT("index" BIGINT, validator_index BIGINT, address VARCHAR, amount VARCHAR)[]')).toEqual({
			type: "array",
			containsNull: true,
			elementType: {
				type: "struct",
				fields: [
					{ name: "index", type: "long", nullable: true, metadata: {} },
					{ name: "validator_index", type: "long", nullable: true, metadata: {} },
					{ name: "address", type: "string", nullable: true, metadata: {} },
					{ name: "amount", type: "string", nullable: true, metadata: {} },
				],
			},
		});
		expect(deltaType("DECIMAL(20,0)")).toBe("decimal(20,0)");
		expect(deltaType("TINYINT")).toBe("byte");
		expect(() => deltaType("UBIGINT")).toThrow(UnsupportedTypeError);
		expect(() => deltaType("UBIGINT")).toThrow(/npm run reindex/);
	});

	it("list head ranks (a block near the head, not final) only without final_only", async () => {
		// The test chain's own manifest with a head ranks entry beside its holder ranks.
		const m = await loadManifest(dataDir, CHAIN_ID, CHAIN);
		const settled = m.ranks?.[0];
		if (!settled) throw new Error("no holder ranks");
		const tip = Math.max(...m.chunks.map((c) => c.to));
		const withHead = { ...m, ranks: [settled, { ...settled, to: tip, gen: 999, rankParts: 2, tokens: { "0xa": 3 } }] };
		const headFiles = (final_only: boolean) => [
			...(liveFiles(withHead, { ...DEFAULT_LAKE, final_only })
				.get("erc20_head_ranks")
				?.keys() ?? []),
		];
		expect(headFiles(false)).toHaveLength(2);
		expect(headFiles(true)).toEqual([]);
		// The holder ranks are listed either way.
		expect(liveFiles(withHead, { ...DEFAULT_LAKE, final_only: true }).get("erc20_ranks")?.size).toBeGreaterThan(0);
	});

	it("parse the writers' flags, naming the flag to fix", () => {
		expect(lakeFlags({})).toEqual({});
		expect(lakeFlags({ delta: "off", "delta-retention-minutes": "90", "delta-final-only": "true" })).toEqual({
			delta: false,
			retention_minutes: 90,
			final_only: true,
		});
		expect(() => lakeFlags({ delta: "yes" })).toThrow(/--delta must be on or off/);
		expect(() => lakeFlags({ "delta-retention-minutes": "0" })).toThrow(/--delta-retention-minutes/);
		expect(() => lakeFlags({ "delta-final-only": "1" })).toThrow(/--delta-final-only/);
	});
});
