import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { asyncBufferFromFile, parquetMetadataAsync, parquetRead, parquetReadObjects, parquetSchema } from "hyparquet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { DATASETS, type DatasetName } from "../../src/extract/rows.js";
import { createStore } from "../../src/query/store/create-store.js";
import { indexRowsSql, rowGroupSizeOf } from "../../src/store/files/parquet-writer.js";
import { INDEX_NAMES, INDEXES, type IndexDef, type IndexName, REPLACED } from "../../src/store/format/indexes.js";
import { partPaths } from "../../src/store/format/key-parts.js";
import { partitionPath } from "../../src/store/format/layout.js";
import { loadManifest, rankPath } from "../../src/store/format/manifest.js";
import { type ChunkEntry, type Manifest, type RankEntry, rankTablesOf } from "../../src/store/format/records.js";
import { SCHEMAS } from "../../src/store/format/schema.js";
import { settledChunks } from "../../src/store/indexes/runs.js";
import type { Scale } from "../../src/synth/scales.js";
import { writeSynthChain } from "../../src/synth/synth.js";
import { computeTargets, type SynthTargets } from "../../src/synth/targets.js";
import { parseChainId } from "../../src/util/chain.js";
import { zstdDecompress } from "../helpers/zstd.js";

/**
 * The synthetic chain generator at a tiny scale: the files it writes are what the backfill
 * writes (manifest, columns and types of src/store/schema.ts, sorted unique ids, index files,
 * bloom filters), readable by an independent Parquet reader (hyparquet, with a zstd decoder of
 * test/helpers), resumable, byte-for-byte deterministic, and served by the API.
 */
const SCALE: Scale = { blocks: 900, accounts: 2000, contracts: 50, factories: 5, partitionSize: 300 };
const CHAIN = parseChainId("eip155-1");
const KEY = "synth-key";
let root: string;
let dir: string;
let manifest: Manifest;
let db: DuckDBInstance;
let firstRun: Awaited<ReturnType<typeof writeSynthChain>>;
let targets: SynthTargets;

const q = (s: string) => `'${s.replaceAll("'", "''")}'`;
const chainFolder = (d: string) => join(d, CHAIN.id);

/** Every file under a folder (relative path → sha256 and mtime). */
function snapshotFiles(folder: string): Map<string, { sha: string; mtime: number }> {
	const out = new Map<string, { sha: string; mtime: number }>();
	const walk = (d: string) => {
		for (const e of readdirSync(d, { withFileTypes: true })) {
			const p = join(d, e.name);
			// Delta logs hold commit times (test/store/delta-lake.test.ts checks them): not data.
			if (e.isDirectory()) {
				if (e.name !== "_delta_log") walk(p);
			} else
				out.set(relative(folder, p), {
					sha: createHash("sha256").update(readFileSync(p)).digest("hex"),
					mtime: statSync(p).mtimeMs,
				});
		}
	};
	walk(folder);
	return out;
}

async function rows(sql: string): Promise<Record<string, unknown>[]> {
	const conn = await db.connect();
	try {
		return (await conn.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
	} finally {
		conn.closeSync();
	}
}

/** Every file the manifest lists: dataset or index, its chunk and path. */
const listed = () => [
	...manifest.chunks.flatMap((c) =>
		[...c.datasets, ...(c.indexes ?? [])].map((name) => ({
			name: name as DatasetName | IndexName,
			chunk: c as { from: number; rows: Partial<Record<string, number>> },
			path: partitionPath(dir, CHAIN.id, name, c),
			parts: c.parts?.[name as IndexName] ?? 1,
		})),
	),
	// Merged index runs (src/store/runs.ts) hold the index rows of the chunks they cover.
	...(manifest.runs ?? []).map((r) => ({
		name: r.index as DatasetName | IndexName,
		chunk: { from: r.from, rows: {} as Partial<Record<string, number>> },
		path: partitionPath(dir, CHAIN.id, r.index, r),
		parts: r.parts ?? 1,
	})),
];
/** The holder ranks entry: every chunk's blocks, as no follower keeps the folder (src/store/holder-ranks.ts). */
const ranks = () => {
	expect(manifest.ranks?.map((r) => [r.from, r.to])).toEqual([[0, 899]]);
	return manifest.ranks?.[0] as RankEntry;
};
/** The holder ranks' files, relative to the chain folder: by token, and the wallet records in their key-range parts. */
const rankNames = () =>
	rankTablesOf(ranks()).flatMap(([t, parts]) =>
		partPaths(relative(chainFolder(dir), rankPath(dir, CHAIN.id, ranks(), t)), parts),
	);
/** An index's key column, and the columns its files are sorted by. */
const indexKey = (name: string) => (INDEXES as Record<string, { key: string }>)[name]?.key;
const indexSort = (name: string) => (INDEXES as Record<string, { sortKey: string }>)[name]?.sortKey.split(", ") ?? [];

/** Columns and DuckDB types a file of `name` must have. */
function expectedColumns(name: DatasetName | IndexName): [string, string][] {
	const index = (INDEXES as Record<string, { source: DatasetName; columns?: Record<string, string> }>)[name];
	// Indexes of their own columns (the balance deltas) name them.
	if (index?.columns) return Object.entries(index.columns);
	const schema = SCHEMAS[index ? index.source : (name as DatasetName)] as Record<string, readonly [string, string]>;
	const columns = Object.entries(schema).map(([c, [type]]) => [c, type] as [string, string]);
	const key = indexKey(name);
	return key && !(key in schema) ? [[key, "VARCHAR"], ...columns] : columns;
}

/** The key a file is sorted by, as SQL over its columns. */
const keyOf = (name: DatasetName | IndexName) =>
	name in INDEXES ? indexSort(name).join(" || '/' || ") : name === "blocks" ? "lpad(number::VARCHAR, 20, '0')" : "id";

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), "chainlake-synth-"));
	dir = join(root, "a");
	firstRun = await writeSynthChain({ scale: SCALE, chain: CHAIN, dataDir: dir, partitionSize: SCALE.partitionSize });
	manifest = await loadManifest(dir, CHAIN.id, CHAIN.number);
	db = await DuckDBInstance.create(":memory:");
	targets = await computeTargets(dir, CHAIN.id);
});

afterAll(async () => {
	db?.closeSync();
	await rm(root, { recursive: true, force: true });
});

describe("writeSynthChain", () => {
	it("lists 3 chunks with every dataset and both indexes, their row counts true", async () => {
		expect(firstRun.chunks).toBe(3);
		expect(manifest.chunks.map((c) => [c.from, c.to])).toEqual([
			[0, 299],
			[300, 599],
			[600, 899],
		]);
		for (const c of manifest.chunks) {
			expect(c.datasets).toEqual(DATASETS);
			// Each index's rows are in the chunk's own file or in a merged run covering it; the
			// deferred ones (balances) too on the last chunk, which is not settled (merges.ts
			// derives them there once nothing else is due).
			const inRuns = (manifest.runs ?? []).filter((r) => r.from <= c.from && c.to <= r.to).map((r) => r.index);
			// (Every kind written: the replaced ones are only read, format/indexes.ts.)
			const written = INDEX_NAMES.filter((i) => !REPLACED.some(([old]) => old === i));
			expect([...(c.indexes ?? []), ...inRuns].sort()).toEqual([...written].sort());
			expect(settledChunks(manifest).includes(c)).toBe(c.to < 600);
		}
		// Chained like a real chain: each chunk's first parent is the previous chunk's last block.
		for (let i = 1; i < manifest.chunks.length; i++) {
			expect(manifest.chunks[i]?.first_parent_hash).toBe(manifest.chunks[i - 1]?.last_hash);
		}
		for (const { name, chunk, path } of listed()) {
			if (!(name in INDEXES)) {
				const [n] = await rows(`SELECT count(*)::INT AS n FROM read_parquet(${q(path)})`);
				expect(n?.n, `${name} ${chunk.from}`).toBe(chunk.rows[name as DatasetName]);
			}
		}
		// Per chunk: the blocks of its range; totals as returned.
		const totals: Record<string, number> = {};
		for (const c of manifest.chunks) {
			expect(c.rows.blocks).toBe(300);
			for (const [d, n] of Object.entries(c.rows)) totals[d] = (totals[d] ?? 0) + (n as number);
		}
		expect(firstRun.rows).toEqual(totals);
		// The shape src/synth/scales.ts documents: about 20 transactions a block, 3 logs and 5 transfers a transaction.
		const per = (a: string, b: string) => (totals[a] as number) / (totals[b] as number);
		expect(per("transactions", "blocks")).toBeGreaterThan(18);
		expect(per("transactions", "blocks")).toBeLessThan(22);
		expect(per("logs", "transactions")).toBeCloseTo(3, 0);
		expect(per("transfers", "transactions")).toBeGreaterThan(4.5);
		expect(per("transfers", "transactions")).toBeLessThan(5.5);
		// Nothing but the listed files (and the manifest, and its previous generation) in the chain folder.
		const files = [...snapshotFiles(chainFolder(dir)).keys()].sort();
		expect(files).toEqual(
			[
				"_manifest.json",
				"_manifest.prev.json",
				...listed().flatMap((f) => {
					const name = relative(chainFolder(dir), f.path);
					// An index file's key-range parts (src/store/format/key-parts.ts) and its key filter.
					return f.name in INDEXES ? [...partPaths(name, f.parts), `${name}.filter`] : [name];
				}),
				// The holder ranks (src/store/holder-ranks.ts), by token, and the wallet records in their parts.
				...rankNames(),
			].sort(),
		);
	});

	it("writes every file with the columns and DuckDB types of src/store/schema.ts", async () => {
		for (const { name, chunk, path } of listed()) {
			const described = await rows(`DESCRIBE SELECT * FROM read_parquet(${q(path)})`);
			expect(
				described.map((d) => [d.column_name, d.column_type]),
				`${name} ${chunk.from}`,
			).toEqual(expectedColumns(name));
		}
	});

	it("writes ids unique and sorted within each file (indexes by address, then id)", async () => {
		for (const { name, chunk, path } of listed()) {
			const key = keyOf(name);
			const [r] = await rows(
				`SELECT count(*)::INT AS n, count(DISTINCT k)::INT AS distinct_keys,
				        count(*) FILTER (WHERE prev >= k)::INT AS out_of_order
				 FROM (SELECT ${key} AS k, lag(${key}) OVER (ORDER BY file_row_number) AS prev
				       FROM read_parquet(${q(path)}, file_row_number = true))`,
			);
			expect(r, `${name} ${chunk.from}`).toEqual({ n: r?.n, distinct_keys: r?.n, out_of_order: 0 });
		}
		// The blocks are exactly 0..899.
		const [b] = await rows(
			`SELECT count(*)::INT AS n, min(number)::INT AS lo, max(number)::INT AS hi FROM read_parquet(${q(`${chainFolder(dir)}/blocks/*.parquet`)})`,
		);
		expect(b).toEqual({ n: 900, lo: 0, hi: 899 });
	});

	it("gives, for every index without a merge of its own, over a chunk cut into block ranges the rows of the whole chunk (a derive reads it piece by piece)", async () => {
		const chunk = manifest.chunks[1] as ChunkEntry;
		const fileOf = (d: DatasetName) => partitionPath(dir, CHAIN.id, d, chunk);
		const pieced = INDEX_NAMES.filter((i) => !(INDEXES[i] as IndexDef).merge && !(INDEXES[i] as IndexDef).replacedBy);
		expect(pieced).toContain("transaction_records");
		for (const index of pieced) {
			const whole = indexRowsSql(index, fileOf);
			const pieces = [
				indexRowsSql(index, fileOf, [null, 400]),
				indexRowsSql(index, fileOf, [400, 450]),
				indexRowsSql(index, fileOf, [450, null]),
			].join(" UNION ALL ");
			const [r] = await rows(
				`SELECT (SELECT count(*) FROM (${whole}))::INT AS n,
				        (SELECT count(*) FROM (SELECT * FROM (${whole}) EXCEPT ALL SELECT * FROM (${pieces})))::INT AS only_whole,
				        (SELECT count(*) FROM (SELECT * FROM (${pieces}) EXCEPT ALL SELECT * FROM (${whole})))::INT AS only_pieces`,
			);
			expect(r?.n, index).toBeGreaterThan(0);
			expect(r, index).toEqual({ n: r?.n, only_whole: 0, only_pieces: 0 });
		}
	});

	it("writes files hyparquet reads in full: every column of every row, the same rows as DuckDB", async () => {
		const compressors = { ZSTD: (input: Uint8Array, size: number) => zstdDecompress(input, size) };
		let decoded = 0;
		for (const { name, chunk, path } of listed()) {
			const label = `${name} ${chunk.from}`;
			const [duck] = await rows(`SELECT count(*)::INT AS n FROM read_parquet(${q(path)})`);
			const file = await asyncBufferFromFile(path);
			const meta = await parquetMetadataAsync(file);
			expect(Number(meta.num_rows), label).toBe(duck?.n);
			// Every column decoded (all pages), counting values per column.
			const perColumn = new Map<string, number>();
			const keys: unknown[][] = [];
			const keyColumns = name in INDEXES ? indexSort(name) : name === "blocks" ? ["number"] : ["id"];
			await parquetRead({
				file,
				metadata: meta,
				compressors,
				onChunk: ({ columnName, columnData, rowStart }) => {
					perColumn.set(columnName, (perColumn.get(columnName) ?? 0) + columnData.length);
					const k = keyColumns.indexOf(columnName);
					if (k >= 0) {
						keys[k] ??= [];
						for (let i = 0; i < columnData.length; i++) (keys[k] as unknown[])[rowStart + i] = columnData[i];
					}
				},
			});
			// hyparquet's own reading of the schema: the expected columns, in order.
			expect(
				parquetSchema(meta).children.map((c) => c.element.name),
				label,
			).toEqual(expectedColumns(name).map(([c]) => c));
			expect([...perColumn.entries()].sort(), label).toEqual(
				duck?.n === 0
					? []
					: expectedColumns(name)
							.map(([c]) => [c, duck?.n])
							.sort(),
			);
			decoded += (duck?.n as number) * perColumn.size;
			// The key columns hold what DuckDB reads, value by value, in file order.
			const viaDuck = await rows(`SELECT ${keyColumns.join(", ")} FROM read_parquet(${q(path)})`);
			for (const [k, c] of keyColumns.entries()) {
				expect(
					(keys[k] ?? []).map((v) => String(v)),
					`${label} ${c}`,
				).toEqual(viaDuck.map((r) => String(r[c])));
			}
		}
		expect(decoded).toBeGreaterThan(1_000_000);
	});

	it("writes the same values hyparquet and DuckDB read, column by column (files of the middle chunk)", async () => {
		const compressors = { ZSTD: (input: Uint8Array, size: number) => zstdDecompress(input, size) };
		// Numbers, bigints and decimal strings compared as text; lists and nulls as they are.
		const norm = (v: unknown): unknown =>
			v === null || v === undefined
				? null
				: Array.isArray(v)
					? v.map(norm)
					: typeof v === "object"
						? Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, norm(x)]))
						: String(v);
		let compared = 0;
		for (const { name, path } of listed().filter((f) => f.chunk.from === 300)) {
			const viaHyparquet = await parquetReadObjects({ file: await asyncBufferFromFile(path), compressors });
			const viaDuck = await rows(`SELECT * FROM read_parquet(${q(path)})`);
			expect(viaHyparquet.length, name).toBe(viaDuck.length);
			for (const [i, row] of viaDuck.entries()) {
				const h = viaHyparquet[i] as Record<string, unknown>;
				expect(norm(h), `${name} row ${i}`).toEqual(norm(row));
			}
			compared += viaDuck.length;
		}
		expect(compared).toBeGreaterThan(10_000);
	});

	it("writes a bloom filter beside every dictionary of the transfers files, which excludes an absent address", async () => {
		const transfers = listed().filter((f) => f.name === "transfers");
		let dictionaries = 0;
		for (const { chunk, path } of transfers) {
			const groups = await rows(
				`SELECT row_group_id AS g, path_in_schema AS col, encodings, bloom_filter_length AS len FROM parquet_metadata(${q(path)})`,
			);
			expect(groups.length, `${chunk.from}`).toBeGreaterThan(0);
			for (const g of groups.filter((x) => String(x.encodings).includes("DICTIONARY"))) {
				expect(Number(g.len), `${chunk.from} ${g.col} group ${g.g}`).toBeGreaterThan(0);
				if (g.col === "contract") dictionaries++;
			}
			// Each group's own filter: those of the contract column rule out an address no row has.
			const probe = await rows(
				`SELECT row_group_id AS g, bloom_filter_excludes AS excl FROM parquet_bloom_probe(${q(path)}, 'contract', '0x${"f".repeat(40)}')`,
			);
			const dictionaryGroups = new Set(
				groups
					.filter((x) => x.col === "contract" && String(x.encodings).includes("DICTIONARY"))
					.map((x) => Number(x.g)),
			);
			for (const p of probe.filter((x) => dictionaryGroups.has(Number(x.g)))) expect(p.excl).toBe(true);
		}
		// Token contracts repeat (a few thousand a chain): DuckDB keeps them in dictionaries.
		expect(dictionaries).toBeGreaterThanOrEqual(transfers.length);
	});

	it("writes row groups of at most 65 536 rows (fewer in the blocks and index files: each its own size), with min/max statistics on the sort key", async () => {
		let indexGroups = 0;
		for (const { name, chunk, path } of listed()) {
			const column = indexKey(name) ?? (name === "blocks" ? "number" : "id");
			const groups = await rows(
				`SELECT row_group_num_rows AS n, stats_min_value AS lo, stats_max_value AS hi
				 FROM parquet_metadata(${q(path)}) WHERE path_in_schema = '${column}' ORDER BY row_group_id`,
			);
			const limit =
				(INDEXES as Record<string, { rowGroupSize: number }>)[name]?.rowGroupSize ??
				rowGroupSizeOf(name as DatasetName);
			for (const g of groups) {
				expect(Number(g.n), `${name} ${chunk.from}`).toBeLessThanOrEqual(limit);
				expect(g.lo, `${name} ${chunk.from}`).not.toBeNull();
				expect(g.hi, `${name} ${chunk.from}`).not.toBeNull();
			}
			if (name in INDEXES) indexGroups += groups.length;
		}
		expect(indexGroups).toBeGreaterThan(2 * manifest.chunks.length);
	});

	it("resumes: run again, it writes nothing and changes no file", async () => {
		const before = snapshotFiles(chainFolder(dir));
		const again = await writeSynthChain({
			scale: SCALE,
			chain: CHAIN,
			dataDir: dir,
			partitionSize: SCALE.partitionSize,
		});
		expect(again).toEqual({ chunks: 3, rows: {} });
		expect(snapshotFiles(chainFolder(dir))).toEqual(before);
	});

	it("is deterministic: another run into another folder writes the same bytes, whatever the thread count", async () => {
		const other = join(root, "b");
		await writeSynthChain({
			scale: SCALE,
			chain: CHAIN,
			dataDir: other,
			partitionSize: SCALE.partitionSize,
			threads: 1,
		});
		const strip = (m: Map<string, { sha: string }>) => new Map([...m].map(([k, v]) => [k, v.sha]));
		const a = strip(snapshotFiles(chainFolder(dir)));
		const b = strip(snapshotFiles(chainFolder(other)));
		// The manifest and its previous generation, and the files of 3 chunks.
		// An index file's key-range parts and its key filter, of chunks and runs; the holder ranks' files.
		const files = listed().reduce((n, f) => n + (f.name in INDEXES ? f.parts + 1 : 1), 0);
		expect(a.size).toBe(2 + files + rankNames().length);
		expect(b).toEqual(a);
	});
});

describe("computeTargets", () => {
	const transfersOf = async (address: string) => {
		const [r] = await rows(
			`SELECT (count(*) FILTER (WHERE sender = ${q(address)}) + count(*) FILTER (WHERE recipient = ${q(address)}))::INT AS n
			 FROM read_parquet(${q(`${chainFolder(dir)}/transfers/*.parquet`)})`,
		);
		return r?.n as number;
	};

	it("picks heavy addresses busier than median ones, and median ones at least as busy as cold ones", async () => {
		const { heavy, median, cold } = targets.addresses;
		for (const list of [heavy, median, cold]) {
			expect(list).toHaveLength(3);
			// The counts are the data's own.
			for (const t of list) expect(t.count, t.value).toBe(await transfersOf(t.value));
		}
		expect(Math.min(...heavy.map((t) => t.count))).toBeGreaterThan(Math.max(...median.map((t) => t.count)));
		expect(Math.min(...median.map((t) => t.count))).toBeGreaterThanOrEqual(Math.max(...cold.map((t) => t.count)));
		expect(heavy[0]?.count).toBeGreaterThan(10 * (median[0]?.count ?? 0));
		// The same for accounts by transactions sent or received.
		const tx = targets.txAccounts;
		for (const t of [...tx.heavy, ...tx.median, ...tx.cold]) {
			const [r] = await rows(
				`SELECT (count(*) FILTER (WHERE from_address = ${q(t.value)}) + count(*) FILTER (WHERE to_address = ${q(t.value)}))::INT AS n
				 FROM read_parquet(${q(`${chainFolder(dir)}/transactions/*.parquet`)})`,
			);
			expect(t.count, t.value).toBe(r?.n);
		}
		expect(Math.min(...tx.heavy.map((t) => t.count))).toBeGreaterThan(Math.max(...tx.median.map((t) => t.count)));
		expect(Math.min(...tx.median.map((t) => t.count))).toBeGreaterThanOrEqual(Math.max(...tx.cold.map((t) => t.count)));
		expect(targets.head).toBe(899);
	});

	it("gives transaction and block hashes that exist, and missing ones that do not", async () => {
		const count = async (dataset: string, column: string, values: string[]) => {
			const [r] = await rows(
				`SELECT count(DISTINCT ${column})::INT AS n FROM read_parquet(${q(`${chainFolder(dir)}/${dataset}/*.parquet`)})
				 WHERE ${column} IN (${values.map(q).join(", ")})`,
			);
			return r?.n;
		};
		expect(targets.txHashes.length).toBeGreaterThanOrEqual(10);
		expect(await count("transactions", "transaction_hash", targets.txHashes)).toBe(new Set(targets.txHashes).size);
		expect(await count("transactions", "transaction_hash", targets.missingTxHashes)).toBe(0);
		expect(targets.blockHashes.length).toBeGreaterThanOrEqual(10);
		expect(await count("blocks", "hash", targets.blockHashes)).toBe(new Set(targets.blockHashes).size);
		expect(await count("blocks", "hash", targets.missingBlockHashes)).toBe(0);
	});
});

describe("the API over a synthetic chain", () => {
	it("answers a heavy address's transfers and a target transaction", async () => {
		const store = await createStore(dir);
		const app = await buildApp({
			store,
			keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
			dataDir: dir,
		});
		try {
			const get = (url: string) => app.inject({ url, headers: { authorization: `Bearer ${KEY}` } });
			const heavy = targets.addresses.heavy[0]?.value as string;
			const list = await get(`/eip155-1/v1/address/${heavy}/transfers?asset_type=native,ft,nft&limit=5`);
			expect(list.statusCode, list.body).toBe(200);
			const body = list.json() as { range: { has_more: boolean }; items: Record<string, unknown>[] };
			expect(body.items).toHaveLength(5);
			expect(body.range.has_more).toBe(true);
			for (const t of body.items) expect([t.sender, t.recipient]).toContain(heavy);
			const hash = targets.txHashes[0] as string;
			const tx = await get(`/eip155-1/v1/txs/${hash}`);
			expect(tx.statusCode, tx.body).toBe(200);
			expect(tx.json()).toMatchObject({ hash });
			expect((await get(`/eip155-1/v1/txs/${targets.missingTxHashes[0]}`)).statusCode).toBe(404);
		} finally {
			await app.close();
			store.close();
		}
	});
});
