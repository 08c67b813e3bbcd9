import { cp, mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INDEXES } from "../../src/store/format/indexes.js";
import { partitionPath } from "../../src/store/format/layout.js";
import { LOG_RECORD_FIELDS, TX_RECORD_FIELDS } from "../../src/store/format/lookup-records.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { listedPaths } from "../../src/store/indexes/listing.js";
import { reindexChain } from "../../src/store/repair/reindex.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto, openViews } from "../helpers/anvil-chain.js";
import { serveFolder } from "../helpers/api.js";
import { olderCopy } from "../helpers/older-folder.js";

/**
 * Lookup records (src/store/format/lookup-records.ts): a new folder answers `/txs/{hash}`,
 * `/txs/{hash}/logs` and `/blocks/{hash}` from `transaction_records` and `block_records`, exactly
 * as a folder written before them answers from its full-row hash indexes and the logs files; and
 * `npm run reindex` turns such a folder into a new one (records written, the old kinds dropped).
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const KEY = "records-key";
let anvil: AnvilInstance;
let root: string;
let fresh: string;
let txHashes: string[];
let blockHashes: string[];

/** Every lookup's answer (status and body) over folder `dir`, by URL. */
async function lookups(dir: string): Promise<Record<string, unknown>> {
	const api = await serveFolder(dir, join(root, "keys.json"), KEY);
	try {
		const out: Record<string, unknown> = {};
		const missing = `0x${"ab".repeat(32)}`;
		const urls = [
			...txHashes.flatMap((h) => [`/txs/${h}`, `/txs/${h}/logs`, `/txs/${h}/logs?include_failed_calls=true`]),
			...blockHashes.map((h) => `/blocks/${h}`),
			`/txs/${missing}`,
			`/blocks/${missing}`,
		];
		for (const url of urls) {
			const res = await api.app.inject({ url: `/${CHAIN_ID}/v1${url}`, headers: { authorization: `Bearer ${KEY}` } });
			out[url] = { status: res.statusCode, body: res.json() };
		}
		return out;
	} finally {
		await api.close();
	}
}

/** A copy of `fresh` as written before the records: the full-row hash indexes instead. */
const olderCopyOf = (name: string) =>
	olderCopy(fresh, join(root, name), { id: CHAIN_ID, number: CHAIN }, [
		["transactions_by_hash", "transaction_records"],
		["blocks_by_hash", "block_records"],
	]);

/**
 * A copy of `fresh` whose transaction records are as written before they were slimmed: every
 * field of TX_RECORD_FIELDS (the ids, the block's hash and timestamp) and each log's id. The same
 * files and keys, each rewritten from the datasets.
 */
async function fullRecordsCopy(name: string): Promise<string> {
	const to = join(root, name);
	await cp(fresh, to, { recursive: true });
	const m = await loadManifest(to, CHAIN_ID, CHAIN);
	const files = [...listedPaths(to, m)].filter((f) => f.includes("/transaction_records/") && f.endsWith(".parquet"));
	expect(files.length).toBeGreaterThan(0);
	const cols = (alias: string, fields: readonly string[]) => fields.map((f) => `${alias}."${f}"`).join(", ");
	const views = await openViews(to, CHAIN);
	try {
		for (const file of files) {
			await views.rows(
				`COPY (SELECT r.hash, json_array(${cols("t", TX_RECORD_FIELDS)}, coalesce(l.logs, []))::VARCHAR AS record
				 FROM read_parquet($f) r JOIN transactions t ON t.transaction_hash = r.hash LEFT JOIN (
				   SELECT g.transaction_hash, list(json_array(${cols("g", LOG_RECORD_FIELDS)}) ORDER BY g.log_index) AS logs
				   FROM logs g GROUP BY ALL) l ON l.transaction_hash = r.hash ORDER BY r.hash)
				 TO '${file}.full' (FORMAT parquet, COMPRESSION zstd)`,
				{ f: file },
			);
			const [full] = await views.rows(
				`SELECT json_array_length(record) AS n FROM read_parquet('${file}.full') LIMIT 1`,
			);
			if (full) expect(Number(full.n)).toBe(TX_RECORD_FIELDS.length + 1);
		}
	} finally {
		views.close();
	}
	for (const file of files) await rename(`${file}.full`, file);
	return to;
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	await runWorkload({ rpcUrl: anvil.url });
	root = await mkdtemp(join(tmpdir(), "chainlake-records-"));
	fresh = join(root, "fresh");
	await backfillInto(fresh, anvil.url, CHAIN, { traces: "parity", partitionSize: 8 });
	const views = await openViews(fresh, CHAIN);
	try {
		txHashes = (await views.rows("SELECT transaction_hash AS h FROM transactions ORDER BY id")).map((r) => String(r.h));
		blockHashes = (await views.rows("SELECT hash AS h FROM blocks ORDER BY number")).map((r) => String(r.h));
	} finally {
		views.close();
	}
}, 180_000);

afterAll(async () => {
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("lookup records", () => {
	it("a new folder lists the record indexes for every chunk, and not the full-row hash indexes", async () => {
		const m = await loadManifest(fresh, CHAIN_ID, CHAIN);
		expect(m.chunks.length).toBeGreaterThan(3);
		for (const c of m.chunks) {
			expect(c.indexes).toContain("transaction_records");
			expect(c.indexes).toContain("block_records");
			expect(c.indexes).not.toContain("transactions_by_hash");
			expect(c.indexes).not.toContain("blocks_by_hash");
		}
		// Two columns, zstd, row groups of at most INDEXES' 256 rows (written by small-groups.ts,
		// below DuckDB's 2,048), min/max statistics on the hash.
		const views = await openViews(fresh, CHAIN);
		try {
			const c = m.chunks.find((x) => (x.rows.transactions ?? 0) > 0);
			const file = partitionPath(fresh, CHAIN_ID, "transaction_records", c as (typeof m.chunks)[number]);
			const meta = await views.rows(
				"SELECT path_in_schema AS col, compression, row_group_num_rows AS n, stats_min_value AS lo FROM parquet_metadata($f)",
				{ f: file },
			);
			expect(new Set(meta.map((r) => r.col))).toEqual(new Set(["hash", "record"]));
			for (const r of meta) {
				expect(r.compression).toBe("ZSTD");
				expect(Number(r.n)).toBeLessThanOrEqual(INDEXES.transaction_records.rowGroupSize);
			}
			// (Arrow's writer cuts string statistics to 64 bytes: a prefix is still a lower bound.)
			expect(meta.find((r) => r.col === "hash")?.lo).toMatch(/^0x[0-9a-f]{62,64}$/);
		} finally {
			views.close();
		}
	});

	it("answers every transaction, its logs and every block exactly as a folder written before them; reindex upgrades that folder", async () => {
		expect(txHashes.length).toBeGreaterThan(30);
		const now = await lookups(fresh);
		// Some transactions have logs, and every hash answers 200.
		const withLogs = txHashes.filter(
			(h) => ((now[`/txs/${h}`] as { body: { logs: unknown[] } }).body.logs?.length ?? 0) > 0,
		);
		expect(withLogs.length).toBeGreaterThan(5);
		for (const h of txHashes) expect((now[`/txs/${h}`] as { status: number }).status).toBe(200);
		expect((now[`/txs/0x${"ab".repeat(32)}`] as { status: number }).status).toBe(404);

		const older = await olderCopyOf("older");
		const before = await loadManifest(older, CHAIN_ID, CHAIN);
		expect(before.chunks.some((c) => c.indexes?.includes("transactions_by_hash"))).toBe(true);
		expect(before.chunks.some((c) => c.indexes?.includes("transaction_records"))).toBe(false);
		expect(await lookups(older)).toEqual(now);

		await reindexChain(older, { id: CHAIN_ID, number: CHAIN });
		const after = await loadManifest(older, CHAIN_ID, CHAIN);
		for (const c of after.chunks) {
			expect(c.indexes).toContain("transaction_records");
			expect(c.indexes).not.toContain("transactions_by_hash");
			expect(c.indexes).not.toContain("blocks_by_hash");
		}
		expect(after.runs?.some((r) => r.index === "transactions_by_hash" || r.index === "blocks_by_hash")).toBeFalsy();
		expect(await lookups(older)).toEqual(now);
	});

	it("records leave out the ids and the block's hash and timestamp, and records written with them answer the same", async () => {
		const views = await openViews(fresh, CHAIN);
		try {
			const m = await loadManifest(fresh, CHAIN_ID, CHAIN);
			const file = [...listedPaths(fresh, m)].find(
				(f) => f.includes("/transaction_records/") && f.endsWith(".parquet"),
			);
			const [row] = await views.rows("SELECT record FROM read_parquet($f) LIMIT 1", { f: String(file) });
			const values = JSON.parse(String(row?.record)) as unknown[];
			expect(values.length).toBe(TX_RECORD_FIELDS.length - 3 + 1);
		} finally {
			views.close();
		}
		expect(await lookups(await fullRecordsCopy("full-records"))).toEqual(await lookups(fresh));
	});
});
