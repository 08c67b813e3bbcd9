import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BLOCK_RECORD_JSON, LOG_RECORD_JSON } from "../../src/api/answers/record-json.js";
import { blockRecord, logRecord, stringifyExact } from "../../src/api/answers/records.js";
import type { DatasetName } from "../../src/extract/rows.js";
import { BLOCK_COLUMNS } from "../../src/query/blocks.js";
import { LOG_COLUMNS } from "../../src/query/transactions.js";
import { SCHEMAS } from "../../src/store/format/schema.js";
import { rowsOf } from "../helpers/duck-rows.js";

/**
 * Pages of blocks and of events as JSON are written by DuckDB (record-json.ts), every other
 * answer by the record shapes from the columns: the two must be the same text for any row this
 * project's writer stores, the values a live chain never gives included (nulls in every nullable
 * field, a nonce of 2^64 - 1, uint256 values of 2^256 - 1, LOG0 to LOG4); record-json.ts says
 * what it assumes beyond that. Tables of the datasets' own schemas hold such rows.
 */
let db: DuckDBInstance;
const MAX_U256 = (2n ** 256n - 1n).toString();
const H = (c: string) => `0x${c.repeat(64)}`;
const A = (c: string) => `0x${c.repeat(40)}`;

async function table(dataset: DatasetName, insert: string) {
	const cols = Object.entries(SCHEMAS[dataset]).map(([name, [type]]) => `"${name}" ${type}`);
	const conn = await db.connect();
	await conn.run(`CREATE TABLE ${dataset} (${cols.join(", ")})`);
	await conn.run(insert);
	conn.closeSync();
}

beforeAll(async () => {
	db = await DuckDBInstance.create(":memory:");
	// A post-London block; a proof-of-work one with the largest values; one with every nullable field null.
	await table(
		"blocks",
		`INSERT INTO blocks (number, hash, parent_hash, timestamp, nonce, mix_hash, sha3_uncles, logs_bloom,
		transactions_root, state_root, receipts_root, miner, difficulty, total_difficulty, size, extra_data, gas_limit,
		gas_used, base_fee_per_gas, transaction_count) VALUES
		(19000000, '${H("a")}', '${H("b")}', 1705173443, 0, '${H("c")}', '${H("d")}', '0x${"00".repeat(256)}',
		 '${H("e")}', '${H("f")}', '${H("1")}', '0x${"95".repeat(20)}', '0', '58750003716598352816469', 160012, '0x6265617665726275696c642e6f7267',
		 30000000, 12952316, '17543129898', 171),
		(9007199254740991, '${H("2")}', '${H("3")}', 4102444800, 18446744073709551615, '${H("4")}', '${H("5")}', '0x',
		 '${H("6")}', '${H("7")}', '${H("8")}', '0x${"00".repeat(20)}', '${MAX_U256}', '${MAX_U256}', 9007199254740991, '0x',
		 9007199254740991, 0, '${MAX_U256}', 2147483647),
		(7, '${H("9")}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	);
	// A Transfer (LOG3), an anonymous LOG0 with empty data, a LOG4, and one with every nullable field null.
	await table(
		"logs",
		`INSERT INTO logs (id, block_number, block_hash, block_timestamp, transaction_index, transaction_hash, log_index,
		origin, address, topic_count, topic0, topic1, topic2, topic3, data) VALUES
		('0000000001220a07-0005-00000002', 19008007, '${H("a")}', 1705270000, 5, '${H("b")}', 2, '${A("1")}', '${A("2")}', 3,
		 '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef', '${H("0")}', '${H("3")}', NULL, '0x${"00".repeat(31)}01'),
		('0000000000000001-0000-00000000', 1, '${H("c")}', 1438269988, 0, '${H("d")}', 0, '${A("4")}', '${A("5")}', 0,
		 NULL, NULL, NULL, NULL, '0x'),
		('001fffffffffffff-ffff-ffffffff', 9007199254740991, '${H("e")}', 4102444800, 65535, '${H("f")}', 2147483647, '${A("6")}', '${A("7")}', 4,
		 '${H("1")}', '${H("2")}', '${H("4")}', '${H("5")}', '0x${"ab".repeat(1024)}'),
		('0000000000000002-0000-00000000', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	);
});

afterAll(() => db?.closeSync());

describe("records written by DuckDB", () => {
	it("a block's is blockRecord's JSON, byte for byte, edge values and nulls included", async () => {
		const rows = await rowsOf(db, `SELECT ${BLOCK_COLUMNS} FROM blocks ORDER BY number`);
		const texts = await rowsOf(db, `SELECT ${BLOCK_RECORD_JSON} AS record FROM blocks ORDER BY number`);
		expect(rows).toHaveLength(3);
		expect(texts.map((t) => t.record)).toEqual(rows.map((r) => stringifyExact(blockRecord(r))));
		// The largest values stay exact integers (never a double's digits).
		expect(texts[2]?.record).toContain(`"difficulty":${MAX_U256},`);
		expect(texts[2]?.record).toContain('"nonce":18446744073709551615,');
	});

	it("a log's is logRecord's JSON, byte for byte, LOG0 to LOG4 and nulls included", async () => {
		const rows = await rowsOf(db, `SELECT ${LOG_COLUMNS} FROM logs ORDER BY id`);
		const texts = await rowsOf(db, `SELECT ${LOG_RECORD_JSON} AS record FROM logs ORDER BY id`);
		expect(rows).toHaveLength(4);
		expect(texts.map((t) => t.record)).toEqual(rows.map((r) => stringifyExact(logRecord(r))));
		expect(texts.map((t) => JSON.parse(t.record as string).op_code)).toEqual(["LOG0", "LOG0", "LOG3", "LOG4"]);
	});
});
