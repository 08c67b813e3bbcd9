import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BLOCK_RECORD_JSON } from "../../src/api/answers/block-json.js";
import { blockRecord, stringifyExact } from "../../src/api/answers/records.js";
import { BLOCK_COLUMNS } from "../../src/query/blocks.js";
import { SCHEMAS } from "../../src/store/format/schema.js";
import { rowsOf } from "../helpers/duck-rows.js";

/**
 * A page of blocks as JSON is written by DuckDB (BLOCK_RECORD_JSON), every other answer by
 * blockRecord from the columns: the two must be the same text for any block this project's
 * writer stores, the values a live chain never gives included (nulls in every nullable field, a
 * nonce of 2^64 - 1, uint256 values of 2^256 - 1); block-json.ts says what it assumes beyond
 * that. A table of the blocks' own schema holds such rows.
 */
let db: DuckDBInstance;
const MAX_U256 = (2n ** 256n - 1n).toString();
const H = (c: string) => `0x${c.repeat(64)}`;

beforeAll(async () => {
	db = await DuckDBInstance.create(":memory:");
	const cols = Object.entries(SCHEMAS.blocks).map(([name, [type]]) => `"${name}" ${type}`);
	const conn = await db.connect();
	await conn.run(`CREATE TABLE blocks (${cols.join(", ")})`);
	// A post-London block; a proof-of-work one with the largest values; one with every nullable field null.
	await conn.run(`INSERT INTO blocks (number, hash, parent_hash, timestamp, nonce, mix_hash, sha3_uncles, logs_bloom,
		transactions_root, state_root, receipts_root, miner, difficulty, total_difficulty, size, extra_data, gas_limit,
		gas_used, base_fee_per_gas, transaction_count) VALUES
		(19000000, '${H("a")}', '${H("b")}', 1705173443, 0, '${H("c")}', '${H("d")}', '0x${"00".repeat(256)}',
		 '${H("e")}', '${H("f")}', '${H("1")}', '0x${"95".repeat(20)}', '0', '58750003716598352816469', 160012, '0x6265617665726275696c642e6f7267',
		 30000000, 12952316, '17543129898', 171),
		(9007199254740991, '${H("2")}', '${H("3")}', 4102444800, 18446744073709551615, '${H("4")}', '${H("5")}', '0x',
		 '${H("6")}', '${H("7")}', '${H("8")}', '0x${"00".repeat(20)}', '${MAX_U256}', '${MAX_U256}', 9007199254740991, '0x',
		 9007199254740991, 0, '${MAX_U256}', 2147483647),
		(7, '${H("9")}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`);
	conn.closeSync();
});

afterAll(() => db?.closeSync());

describe("a block's record written by DuckDB", () => {
	it("is blockRecord's JSON, byte for byte, edge values and nulls included", async () => {
		const rows = await rowsOf(db, `SELECT ${BLOCK_COLUMNS} FROM blocks ORDER BY number`);
		const texts = await rowsOf(db, `SELECT ${BLOCK_RECORD_JSON} AS record FROM blocks ORDER BY number`);
		expect(rows).toHaveLength(3);
		expect(texts.map((t) => t.record)).toEqual(rows.map((r) => stringifyExact(blockRecord(r))));
		// The largest values stay exact integers (never a double's digits).
		expect(texts[2]?.record).toContain(`"difficulty":${MAX_U256},`);
		expect(texts[2]?.record).toContain('"nonce":18446744073709551615,');
	});
});
