import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createParquetWriter } from "../../src/store/files/parquet-writer.js";
import { amountSql } from "../../src/store/format/amounts.js";
import { partCondition, partPaths } from "../../src/store/format/key-parts.js";
import { writeWalletRecords } from "../../src/store/holdings/holder-ranks.js";
import { rowsOf } from "../helpers/duck-rows.js";

/**
 * The wallet records (one row per holder: its holdings as JSON) are written part by part, so the
 * GROUP BY's memory follows a part's wallets, not the chain's (the one sort before it spills): one
 * GROUP BY of every wallet at once ran synth L's writer out of its 4 GB. Here 600,000 wallets' records through a writer held to
 * 150 MB, which that one GROUP BY needs more than (measured: it failed at 100 and 200 MB on
 * these rows, and took 600), equal to what it gives with no limit.
 */
let root: string;
let db: DuckDBInstance;
const ranks = () => join(root, "ranks.parquet");
const WALLETS = 600_000;

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), "chainlake-wallet-records-"));
	db = await DuckDBInstance.create(":memory:");
	const conn = await db.connect();
	// A ranks file's columns (holder-ranks.ts ranksSql), sorted by token as it is: 900,000 holdings
	// of 997 tokens; balances over two limbs, some negative in the top one; one token per holding of a wallet.
	await conn.run(`COPY (
		SELECT '0x' || left(md5('t' || (i % 997)::VARCHAR), 40) AS token,
		       '0x' || left(md5('w' || (i % ${WALLETS})::VARCHAR), 40) AS address,
		       (hash(i, 'a') % 1000000000)::BIGINT AS d0,
		       CASE WHEN i % 3 = 0 THEN (hash(i, 'b') % 1000000000)::BIGINT ELSE 0 END AS d1,
		       0::BIGINT AS d2, 0::BIGINT AS d3, 0::BIGINT AS d4, 0::BIGINT AS d5, 0::BIGINT AS d6, 0::BIGINT AS d7,
		       CASE WHEN i % 101 = 0 THEN -1 ELSE 0 END::BIGINT AS d8,
		       (i % 50000)::BIGINT AS last_block
		FROM range(900000) r(i) ORDER BY token, address) TO '${ranks()}' (FORMAT parquet)`);
	conn.closeSync();
}, 60_000);

afterAll(async () => {
	db?.closeSync();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("wallet records", () => {
	it("are written within a memory limit a part's wallets fit in, equal to one GROUP BY of them all", async () => {
		const writer = await createParquetWriter({ memoryLimit: "150MB", tempDirectory: join(root, "spill") });
		const wallets = join(root, "records", "erc20_wallet_records.parquet");
		let parts: number;
		try {
			parts = await writeWalletRecords(writer, ranks(), wallets);
		} finally {
			writer.close();
		}
		expect(parts).toBeGreaterThan(1);
		// Only the parts are left (the step's holdings file is removed).
		expect((await readdir(join(root, "records"))).sort()).toEqual(
			partPaths(wallets, parts)
				.map((p) => p.split("/").pop())
				.sort(),
		);
		const files = partPaths(wallets, parts)
			.map((p) => `'${p}'`)
			.join(", ");
		// What one GROUP BY of every wallet gives, with no memory limit.
		const conn = await db.connect();
		await conn.run(`CREATE TEMP TABLE reference AS SELECT address, to_json(list([token, CAST(${amountSql()} AS VARCHAR),
			last_block::VARCHAR] ORDER BY token))::VARCHAR AS record FROM read_parquet('${ranks()}') GROUP BY address`);
		await conn.run(`CREATE TEMP TABLE written AS FROM read_parquet([${files}])`);
		const diff = (
			await conn.runAndReadAll(`SELECT (SELECT count(*) FROM (FROM written EXCEPT ALL FROM reference)) AS extra,
				(SELECT count(*) FROM (FROM reference EXCEPT ALL FROM written)) AS missing, (SELECT count(*) FROM written) AS n`)
		).getRowObjectsJS();
		conn.closeSync();
		expect(diff).toEqual([{ extra: 0n, missing: 0n, n: BigInt(WALLETS) }]);
		// Each part holds its key range's wallets, sorted by address.
		for (const [i, path] of partPaths(wallets, parts).entries()) {
			const [check] = await rowsOf(
				db,
				`SELECT count(*) FILTER (WHERE NOT (${partCondition("address", i, parts)})) AS outside,
				        count(*) FILTER (WHERE address < prev) AS unsorted
				 FROM (SELECT address, lag(address) OVER (ORDER BY file_row_number) AS prev FROM read_parquet('${path}', file_row_number = true))`,
			);
			expect(check, path).toEqual({ outside: 0n, unsorted: 0n });
		}
	}, 120_000);
});
