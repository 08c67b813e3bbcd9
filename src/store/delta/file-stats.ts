import type { DuckDBConnection } from "@duckdb/node-api";
import { sqlString as quote } from "../../util/sql-string.js";

/** What a Delta `add` says of a data file besides its name: columns, rows, per-column statistics. */
export interface FileFacts {
	columns: { name: string; type: string }[];
	numRecords: number;
	/** The `stats` JSON text (PROTOCOL.md "Per-file Statistics"). */
	stats: string;
}

const NUMERIC = new Set(["BIGINT", "INTEGER", "SMALLINT", "TINYINT"]);
/**
 * Text columns get min/max only up to this length: block and transaction hashes, addresses,
 * ids and decimal amounts are what engines filter on; call data and byte code are not, and their
 * min/max would only make the log large.
 */
const MAX_TEXT_STAT = 66;

/** Ascending, by `<` (code units for text: byte order for the ASCII our columns hold). */
const ordered = <T extends bigint | string>(xs: T[]): T[] => xs.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/**
 * Reads a Parquet file's footer (row-group statistics DuckDB wrote) into Delta file statistics,
 * so engines skip files by block number, address or hash without opening them. Integers are
 * written as JSON numbers from their text, so no value passes through a float.
 */
export async function fileFacts(conn: DuckDBConnection, path: string): Promise<FileFacts> {
	const described = await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${quote(path)})`);
	const columns = described
		.getRowObjectsJS()
		.map((r) => ({ name: String(r.column_name), type: String(r.column_type) }));
	const meta = await conn.runAndReadAll(
		`SELECT path_in_schema AS col, row_group_id AS rg, row_group_num_rows::BIGINT AS n,
		        stats_min_value AS lo, stats_max_value AS hi, stats_null_count::BIGINT AS nulls,
		        coalesce(min_is_exact, true) AND coalesce(max_is_exact, true) AS exact
		 FROM parquet_metadata(${quote(path)})`,
	);
	const rows = meta.getRowObjectsJS() as {
		col: string;
		rg: number;
		n: bigint;
		lo: string | null;
		hi: string | null;
		nulls: bigint | null;
		exact: boolean;
	}[];
	const groups = new Map<number, bigint>();
	for (const r of rows) groups.set(Number(r.rg), BigInt(r.n));
	const numRecords = Number([...groups.values()].reduce((a, b) => a + b, 0n));

	const min: string[] = [];
	const max: string[] = [];
	const nullCount: string[] = [];
	for (const c of columns) {
		const numeric = NUMERIC.has(c.type);
		if (!numeric && c.type !== "VARCHAR") continue; // lists, structs, decimals: no statistics
		const chunks = rows.filter((r) => r.col === c.name);
		if (chunks.length !== groups.size || chunks.length === 0) continue;
		const key = JSON.stringify(c.name);
		if (chunks.every((r) => r.nulls != null))
			nullCount.push(`${key}:${chunks.reduce((a, r) => a + BigInt(r.nulls ?? 0), 0n)}`);
		const values = chunks.filter((r) => r.lo != null && r.hi != null);
		// Row groups that are all null have no min/max; the others must all have them.
		const allNull = chunks.filter((r) => r.lo == null && BigInt(r.nulls ?? -1) === BigInt(r.n));
		if (values.length === 0 || values.length + allNull.length !== chunks.length) continue;
		if (numeric) {
			const lo = ordered(values.map((r) => BigInt(r.lo as string)))[0];
			const hi = ordered(values.map((r) => BigInt(r.hi as string))).at(-1);
			min.push(`${key}:${lo}`);
			max.push(`${key}:${hi}`);
		} else {
			// Arrow's writer (files/small-groups.ts) cuts text statistics to 64 bytes: bounds, but not
			// the values, which Delta's statistics are taken to be here.
			if (values.some((r) => !r.exact)) continue;
			const lo = ordered(values.map((r) => r.lo as string))[0] as string;
			const hi = ordered(values.map((r) => r.hi as string)).at(-1) as string;
			if (lo.length > MAX_TEXT_STAT || hi.length > MAX_TEXT_STAT) continue;
			min.push(`${key}:${JSON.stringify(lo)}`);
			max.push(`${key}:${JSON.stringify(hi)}`);
		}
	}
	const stats = `{"numRecords":${numRecords},"minValues":{${min.join(",")}},"maxValues":{${max.join(",")}},"nullCount":{${nullCount.join(",")}}}`;
	return { columns, numRecords, stats };
}
