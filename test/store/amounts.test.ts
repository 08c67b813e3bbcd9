import { DuckDBInstance } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import {
	amountOf,
	amountOfParts,
	amountSql,
	LIMBS,
	normalizedPartsSql,
	PARTS,
	partsOfAmount,
} from "../../src/store/format/amounts.js";

// Limb sums as the balance indexes leave them: signed, each far past one limb's 10^9 (a sum of
// many rows), some empty (NULL), and whole uint256 values near 2^256 and below zero.
function limbCases(): (bigint | null)[][] {
	let seed = 7n;
	const next = () => {
		seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
		return seed;
	};
	const cases: (bigint | null)[][] = [];
	const max = (2n ** 256n - 1n).toString().padStart(LIMBS.length * 9, "0");
	cases.push(LIMBS.map((_, i) => BigInt(max.slice(max.length - 9 * (i + 1), max.length - 9 * i))));
	cases.push(LIMBS.map(() => 0n));
	cases.push(LIMBS.map((_, i) => (i === 0 ? -5n : i === 1 ? 1n : 0n)));
	cases.push(LIMBS.map(() => null));
	for (let k = 0; k < 200; k++)
		cases.push(
			LIMBS.map((_, i) => {
				const r = next();
				if (r % 11n === 0n) return null;
				const v = next() % 10n ** BigInt(9 + Number(r % 12n));
				return (r >> 8n) % 3n === 0n && i < 8 - (k % 4) ? -v : v;
			}),
		);
	return cases;
}

describe("amounts in SQL", () => {
	it("amountSql adds limb sums up exactly as a BIGNUM (an empty limb as 0), and orders amounts as their values; the parts agree with normalizedPartsSql", async () => {
		const db = await DuckDBInstance.create(":memory:");
		const conn = await db.connect();
		try {
			const cases = limbCases();
			const values = cases
				.map((c, i) => `(${i}, ${c.map((d) => (d === null ? "NULL" : `${d}::HUGEINT`)).join(", ")})`)
				.join(", ");
			const rows = (
				await conn.runAndReadAll(
					`WITH v(i, ${LIMBS.join(", ")}) AS (VALUES ${values}),
					 z AS (SELECT i, ${LIMBS.map((l) => `coalesce(${l}, 0) AS ${l}`).join(", ")} FROM v),
					 t AS (SELECT v.i, ${amountSql()} AS b, p.* EXCLUDE (i) FROM v JOIN (SELECT i, ${normalizedPartsSql()} FROM z) p ON p.i = v.i)
					 SELECT i, CAST(b AS VARCHAR) AS raw, ${PARTS.map((p) => `CAST(${p} AS VARCHAR) AS ${p}`).join(", ")} FROM t ORDER BY b DESC, i`,
				)
			).getRowObjectsJS();
			expect(rows).toHaveLength(cases.length);
			const want = cases.map((c, i) => ({ i, v: amountOf(c.map((d) => (d === null ? null : d.toString()))) }));
			for (const r of rows) {
				const v = (want[Number(r.i)] as { v: bigint }).v;
				expect(BigInt(String(r.raw)), `case ${r.i}`).toBe(v);
				const parts = PARTS.map((p) => String(r[p]));
				expect(partsOfAmount(v)).toEqual(parts);
				expect(amountOfParts(parts)).toBe(v);
			}
			// DuckDB's order of the BIGNUMs (b descending, then i) is the values' order.
			const order = [...want].sort((a, b) => (a.v === b.v ? a.i - b.i : a.v > b.v ? -1 : 1)).map((w) => w.i);
			expect(rows.map((r) => Number(r.i))).toEqual(order);
			expect(want.some((w) => w.v < 0n)).toBe(true);
			expect(want.some((w) => w.v > 2n ** 200n)).toBe(true);
		} finally {
			conn.closeSync();
			db.closeSync();
		}
	});
});
