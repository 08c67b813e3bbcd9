import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { itemId, TOKEN_ORDINAL_BASE } from "../../src/extract/ids.js";
import type { DatasetRows, TransferRow } from "../../src/extract/rows.js";
import { createParquetWriter, type ParquetWriter } from "../../src/store/files/parquet-writer.js";

const U256_MAX = (2n ** 256n - 1n).toString();
const BIG = [2n ** 53n + 1n, 2n ** 128n + 7n, 2n ** 255n + 12345n, 2n ** 256n - 1n].map(String);

function transfer(i: number, value: string): TransferRow {
	const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
	return {
		id: itemId(100 + i, 0, TOKEN_ORDINAL_BASE + i),
		block_number: 100 + i,
		block_hash: `0x${"ab".repeat(31)}${(i % 256).toString(16).padStart(2, "0")}`,
		block_timestamp: 1_700_000_000 + i,
		transaction_index: 0,
		transaction_hash: `0x${i.toString(16).padStart(64, "0")}`,
		origin: addr(i),
		asset_type: "ft",
		token_standard: "erc20",
		contract: addr(7),
		sender: addr(i),
		recipient: addr(i + 1_000_000),
		value,
		token_id: value,
		batch_values: [value, "1"],
		batch_token_ids: [U256_MAX],
		operator: null,
		log_index: i,
		trace_index: null,
	};
}

let dir: string;
let writer: ParquetWriter;
let db: DuckDBInstance;
beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "chainlake-writer-"));
	writer = await createParquetWriter();
	db = await DuckDBInstance.create(":memory:");
});
afterAll(async () => {
	writer.close();
	db.closeSync();
	await rm(dir, { recursive: true, force: true });
});

async function query(sql: string) {
	const conn = await db.connect();
	try {
		return (await conn.runAndReadAll(sql)).getRowObjectsJson();
	} finally {
		conn.closeSync();
	}
}

describe("parquet writer", () => {
	it("keeps uint256 values exact (above 2^53, 2^128, up to 2^256-1)", async () => {
		const path = join(dir, "u256.parquet");
		await writer.write(
			"transfers",
			BIG.map((v, i) => transfer(i, v)),
			path,
			join(dir, "staging"),
		);
		const rows = await query(`SELECT value, token_id, batch_values, batch_token_ids FROM '${path}' ORDER BY id`);
		expect(rows.map((r) => r.value)).toEqual(BIG);
		expect(rows.map((r) => r.token_id)).toEqual(BIG);
		expect(rows[3]?.batch_values).toEqual([U256_MAX, "1"]);
		expect(rows[0]?.batch_token_ids).toEqual([U256_MAX]);
		// Stored as strings, not as a lossy DOUBLE.
		const types = await query(
			`SELECT path_in_schema, type FROM parquet_metadata('${path}') WHERE path_in_schema IN ('value', 'token_id')`,
		);
		expect(types.every((t) => t.type === "BYTE_ARRAY")).toBe(true);
	});

	it("writes repeating columns as dictionaries with bloom filters the lookup uses, all-distinct ones plain, in V2 pages", async () => {
		const path = join(dir, "bloom.parquet");
		// Every row its own sender, recipient, origin and transaction; one contract; 256 block hashes.
		const rows = Array.from({ length: 5000 }, (_, i) => transfer(i, String(i + 1)));
		await writer.write("transfers", rows, path, join(dir, "staging"));
		const meta = await query(
			`SELECT path_in_schema AS col, encodings, bloom_filter_length AS len FROM parquet_metadata('${path}')`,
		);
		const of = (col: string) => meta.find((r) => r.col === col);
		for (const col of ["contract", "block_hash"]) {
			expect(String(of(col)?.encodings), col).toContain("DICTIONARY");
			expect(Number(of(col)?.len), col).toBeGreaterThan(0);
		}
		// A dictionary as large as the column, and a bloom filter beside it, only add bytes.
		for (const col of ["sender", "recipient", "transaction_hash", "value"]) {
			expect(String(of(col)?.encodings), col).not.toContain("DICTIONARY");
			expect(of(col)?.len ?? null, col).toBeNull();
		}
		// Version 2 pages: the block numbers delta-encoded.
		expect(String(of("block_number")?.encodings)).toContain("DELTA_BINARY_PACKED");
		const probe = await query(
			`SELECT bloom_filter_excludes AS excl FROM parquet_bloom_probe('${path}', 'contract', '0x${"f".repeat(40)}')`,
		);
		expect(probe.every((p) => p.excl === true)).toBe(true);
		const hit = await query(
			`SELECT bloom_filter_excludes AS excl FROM parquet_bloom_probe('${path}', 'contract', '${rows[42]?.contract}')`,
		);
		expect(hit.some((p) => p.excl === false)).toBe(true);
	});

	it("writes blocks in row groups of 4,096 (a block range decodes only the groups it touches), other datasets in 65,536", async () => {
		const hash = (n: number, salt: number) => `0x${(n * 7919 + salt).toString(16).padStart(64, "0")}`;
		// Only the columns a block needs here; the others are written as NULL.
		const blocks = Array.from({ length: 10_000 }, (_, n) => ({
			number: n,
			hash: hash(n, 1),
			parent_hash: hash(n, 2),
			timestamp: 1_700_000_000 + n,
		})) as unknown as DatasetRows["blocks"];
		const written = join(dir, "groups", "blocks.parquet");
		await writer.write("blocks", blocks, written, join(dir, "staging"));
		// Merged (compaction) and put together (a chunk merge): the same groups.
		const merged = join(dir, "groups", "blocks-merged.parquet");
		await writer.merge("blocks", [written], merged);
		const joined = join(dir, "groups", "blocks-joined.parquet");
		await writer.concat("blocks", [written, merged], joined);
		for (const [path, rows] of [
			[written, 10_000],
			[merged, 10_000],
			[joined, 20_000],
		] as const) {
			const groups = await query(
				`SELECT row_group_num_rows::INT AS n FROM parquet_metadata('${path}') WHERE path_in_schema = 'number' ORDER BY row_group_id`,
			);
			expect(
				groups.reduce((sum, g) => sum + Number(g.n), 0),
				path,
			).toBe(rows);
			expect(Math.max(...groups.map((g) => Number(g.n))), path).toBe(4_096);
		}
		const transfers = join(dir, "groups", "transfers.parquet");
		await writer.write(
			"transfers",
			Array.from({ length: 10_000 }, (_, i) => transfer(i, "1")),
			transfers,
			join(dir, "staging"),
		);
		const one = await query(`SELECT count(DISTINCT row_group_id)::INT AS n FROM parquet_metadata('${transfers}')`);
		expect(one[0]?.n).toBe(1);
	});

	it("writes a readable empty file for an empty dataset, and leaves no temporary files", async () => {
		const path = join(dir, "empty", "self_destructs.parquet");
		await writer.write("self_destructs", [], path, join(dir, "staging"));
		const rows = await query(`SELECT count(*)::INT AS n FROM '${path}'`);
		expect(rows[0]?.n).toBe(0);
		expect(await readdir(join(dir, "empty"))).toEqual(["self_destructs.parquet"]);
		expect(await readdir(join(dir, "staging"))).toEqual([]);
	});

	it("writes an index of an empty source as a new writer's COPY would, for sources of the same bytes and of others", async () => {
		const staging = join(dir, "staging");
		const [a, b] = [join(dir, "empty-a", "transfers.parquet"), join(dir, "empty-b", "transfers.parquet")];
		await writer.write("transfers", [], a, staging);
		await writer.write("transfers", [], b, staging);
		// An empty source of other bytes (another schema: block_number unsigned, as older folders wrote it).
		const c = join(dir, "empty-c", "transfers.parquet");
		await mkdir(dirname(c));
		await (await db.connect()).run(
			`COPY (SELECT * REPLACE (block_number::UBIGINT AS block_number) FROM '${a}') TO '${c}' (FORMAT parquet)`,
		);
		// a and b are the same bytes: b's index is the copy of a's (derived one after the other).
		expect(Buffer.compare(await readFile(a), await readFile(b))).toBe(0);
		for (const index of ["wallet_transfers", "erc20_holders"] as const) {
			const ours: Buffer[] = [];
			for (const src of [a, b, c]) {
				const path = join(dirname(src), `${index}.parquet`);
				expect((await writer.derive(index, () => src, path)).rows).toBe(0);
				ours.push(await readFile(path));
			}
			// Each against a new writer's, which has copied nothing yet.
			for (const [i, src] of [a, b, c].entries()) {
				const path = join(dirname(src), `${index}.fresh.parquet`);
				const fresh = await createParquetWriter();
				try {
					await fresh.derive(index, () => src, path);
				} finally {
					fresh.close();
				}
				expect(Buffer.compare(ours[i] as Buffer, await readFile(path)), `${index} from ${src}`).toBe(0);
			}
			// The unsigned source's by-address index keeps its type: not the others' bytes (the balance
			// deltas cast their block numbers, so theirs are the same).
			if (index === "wallet_transfers") expect(Buffer.compare(ours[0] as Buffer, ours[2] as Buffer)).not.toBe(0);
		}
	});
});
