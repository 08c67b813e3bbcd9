/**
 * The query runner reads a statement's rows from its materialized result synchronously
 * (src/query/store/result-rows.ts) instead of through the library's `runAndReadAll`, whose
 * chunk fetches each cross the thread pool. The rows must be the very objects the library
 * gives: every type the store's statements return (and more), NULLs, strings stored inline
 * (up to 12 bytes) and out of line, an empty result, several chunks, a repeated column name.
 */
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resultRows } from "../../src/query/store/result-rows.js";

let instance: DuckDBInstance;
let conn: DuckDBConnection;

beforeAll(async () => {
	instance = await DuckDBInstance.create(":memory:");
	conn = await instance.connect();
});
afterAll(() => {
	conn.closeSync();
	instance.closeSync();
});

const STATEMENTS: Record<string, string> = {
	"scalars and NULLs": `SELECT 42::BIGINT AS b, 7::INTEGER AS i, 1.5::DOUBLE AS d, true AS t, 'short' AS s,
		repeat('long text ', 20) AS l, NULL::VARCHAR AS n, NULL::BIGINT AS nb, '12.345'::DECIMAL(18,3) AS dec,
		340282366920938463463374607431768211455::UHUGEINT AS u, 'x'::BLOB AS blob, DATE '2024-01-02' AS day,
		TIMESTAMP '2024-01-02 03:04:05' AS ts, (-3)::TINYINT AS ti, 300::SMALLINT AS si, 4000000000::UINTEGER AS ui,
		250::UTINYINT AS ut, 65000::USMALLINT AS us, 18446744073709551615::UBIGINT AS ub, 0.25::FLOAT AS f,
		(-170141183460469231731687303715884105728)::HUGEINT AS h, NULL::BOOLEAN AS nt, false AS nf, NULL::DOUBLE AS nd,
		NULL::UHUGEINT AS nu, '' AS empty, '123456789012' AS inline12, '1234567890123' AS outline13,
		'NaN'::DOUBLE AS nan, '-0.0'::DOUBLE AS negzero, 'inf'::FLOAT AS inf, '-inf'::DOUBLE AS neginf,
		NULL::TINYINT AS nti, NULL::UBIGINT AS nub, NULL::HUGEINT AS nh, NULL::FLOAT AS nfl, NULL::INTEGER AS ni`,
	"lists and structs": `SELECT [1, 2, NULL]::BIGINT[] AS xs, {'a': 'b', 'n': 3} AS st, ['0x' || repeat('ab', 20)] AS hexes,
		[{'k': 1}] AS ls, MAP {'m': 1} AS mp`,
	"several chunks": `SELECT range AS n, 'id-' || lpad(range::VARCHAR, 20, '0') AS id, CASE WHEN range % 3 = 0 THEN NULL ELSE range::VARCHAR END AS maybe
		FROM range(5000)`,
	"no rows": "SELECT 1::BIGINT AS a, 'x' AS b WHERE false",
	"a repeated name": "SELECT 1 AS a, 2 AS a, 3 AS a_1",
};

describe("resultRows", () => {
	for (const [name, sql] of Object.entries(STATEMENTS)) {
		it(`gives the rows runAndReadAll gives: ${name}`, async () => {
			const expected = (await conn.runAndReadAll(sql)).getRowObjectsJS();
			const prepared = await conn.prepare(sql);
			const result = await prepared.run();
			const rows = resultRows(result);
			expect(rows).toEqual(expected);
			// The same keys in the same order (a row written out as JSON keeps it).
			expect(rows.map((r) => Object.keys(r))).toEqual(expected.map((r) => Object.keys(r)));
			if (name === "several chunks") {
				expect(result.chunkCount).toBeGreaterThan(1);
				expect(rows).toHaveLength(5000);
			}
			if (name === "no rows") expect(rows).toEqual([]);
			prepared.destroySync();
		});
	}
});
