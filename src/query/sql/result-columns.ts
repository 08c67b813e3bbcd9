import { type DuckDBType, DuckDBTypeId } from "@duckdb/node-api";

/*
 * The columns of a statement's answer: their names made unique, DuckDB's type, and the kind the
 * tabular formats (JSON, CSV, Arrow) carry each as. ColumnKind is defined here, the lowest place
 * that needs it; the API's list answers (api/answers/list-columns.ts) give their columns the same kinds.
 */

/**
 * How a column is carried in the tabular formats; docs/api-contract.md §5 lists the kinds:
 *   int     Int64: block numbers, indexes, gas, counts; timestamps as Unix seconds
 *   uint64  Uint64: a block's PoW nonce (up to 2^64 - 1)
 *   bool    Bool: transaction and call status, ghost
 *   float   Float64: USD prices and values (null until a price source exists)
 *   text    Utf8: hashes, addresses, hex data, names; uint256 amounts and difficulties as exact
 *           decimal text (a batch transfer's values and ids: a JSON array of them)
 *   json    Utf8 holding JSON: nested lists and objects of free shape (a transaction's logs,
 *           trace addresses, gas_range, NFT metadata), not flattened into columns
 */
export type ColumnKind = "int" | "uint64" | "bool" | "float" | "text" | "json";

export interface SqlColumn {
	name: string;
	/** DuckDB's type, as DuckDB writes it ("BIGINT", "DECIMAL(38,0)", "VARCHAR[]"). */
	type: string;
	/** How the tabular formats carry it (ColumnKind): Arrow type, JSON number or text. */
	kind: ColumnKind;
}

/**
 * Where the rows go, a chunk at a time; `rows` returns the bytes they added to the answer (or,
 * handing them to another process, a promise the runner awaits before the next chunk).
 */
export interface SqlSink {
	columns(columns: SqlColumn[]): void;
	rows(rows: unknown[][]): number | Promise<number>;
}

const INTEGERS = new Set<DuckDBTypeId>([
	DuckDBTypeId.TINYINT,
	DuckDBTypeId.SMALLINT,
	DuckDBTypeId.INTEGER,
	DuckDBTypeId.BIGINT,
	DuckDBTypeId.UTINYINT,
	DuckDBTypeId.USMALLINT,
	DuckDBTypeId.UINTEGER,
]);
const NESTED = new Set<DuckDBTypeId>([
	DuckDBTypeId.LIST,
	DuckDBTypeId.ARRAY,
	DuckDBTypeId.STRUCT,
	DuckDBTypeId.MAP,
	DuckDBTypeId.UNION,
]);

/**
 * A result column's kind: integers up to 64 bits as numbers (Int64, or Uint64 for UBIGINT),
 * booleans and floats as such, nested values as JSON; everything else as text: DECIMAL and the
 * 128-bit integers exactly (a float would round them), dates and times as DuckDB writes them,
 * BLOB as 0x hex.
 */
export function kindOf(type: DuckDBType): ColumnKind {
	if (INTEGERS.has(type.typeId)) return "int";
	if (type.typeId === DuckDBTypeId.UBIGINT) return "uint64";
	if (type.typeId === DuckDBTypeId.BOOLEAN) return "bool";
	if (type.typeId === DuckDBTypeId.FLOAT || type.typeId === DuckDBTypeId.DOUBLE) return "float";
	if (NESTED.has(type.typeId)) return "json";
	return "text";
}

/** Result column names made unique (`a`, `a_2`), so each row can be an object. */
export function uniqueNames(names: string[]): string[] {
	const seen = new Map<string, number>();
	return names.map((n) => {
		const count = (seen.get(n) ?? 0) + 1;
		seen.set(n, count);
		return count === 1 ? n : `${n}_${count}`;
	});
}
