import type { DuckDBInstance } from "@duckdb/node-api";

/** index → [source dataset, first side, second side], written out here independently of src/store/indexes.ts. */
export const INDEX_SIDES = {
	wallet_transfers: ["transfers", "sender", "recipient"],
	wallet_transactions: ["transactions", "from_address", "to_address"],
} as const;

/** The columns each kind keeps beside its record (after address, id, block_number and side). */
const KEPT: Record<keyof typeof INDEX_SIDES, string> = {
	wallet_transfers: "asset_type, token_standard, contract, ",
	wallet_transactions: "",
};

/**
 * The record of each kind: the source's fields as one JSON array, in this order (the API's
 * columns but id, block_number and the block's hash and timestamp), written out
 * here independently of address-records.ts.
 */
const RECORD_FIELDS: Record<keyof typeof INDEX_SIDES, string> = {
	wallet_transfers:
		"transaction_hash, origin, contract, sender, recipient, value, token_id, batch_values, batch_token_ids, asset_type, token_standard",
	wallet_transactions:
		"transaction_hash, transaction_index, from_address, to_address, value, input, nonce, status, transaction_type, fee, gas_used, cumulative_gas_used, gas, gas_price, effective_gas_price, max_fee_per_gas, max_priority_fee_per_gas, contract_address, r, s, v",
};

const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * Compares an index file with the rows it should hold, computed from its source dataset
 * file(s): one row per side (`address` = the first side, then the second side only if it is
 * set and differs), as (address, id, block_number, side, the columns kept, record). Returns the rows in the file but not expected
 * (`extra`) and expected but not in the file (`missing`) as multisets, both counts, and whether
 * the file's rows come in (address, id) order with no key twice.
 */
export async function indexDiff(
	db: DuckDBInstance,
	index: keyof typeof INDEX_SIDES,
	/** The index file, or every key-range part of it in order (key ranges ascend with the part). */
	indexFile: string | string[],
	sourceFiles: string[],
) {
	const [, a, b] = INDEX_SIDES[index];
	const src = `read_parquet([${sourceFiles.map(quote).join(", ")}])`;
	const file = `read_parquet([${[indexFile].flat().map(quote).join(", ")}])`;
	const row = `${KEPT[index]}json_array(${RECORD_FIELDS[index]})::VARCHAR AS record`;
	// side: which side the address is ('out' the first, 'in' the second, 'self' both).
	const expected = `(SELECT ${a} AS address, id, block_number, CASE WHEN ${b} IS NOT NULL AND ${b} = ${a} THEN 'self' ELSE 'out' END AS side, ${row} FROM ${src} WHERE ${a} IS NOT NULL
		UNION ALL SELECT ${b} AS address, id, block_number, 'in' AS side, ${row} FROM ${src} WHERE ${b} IS NOT NULL AND ${b} <> ${a})`;
	const conn = await db.connect();
	try {
		const [counts] = (
			await conn.runAndReadAll(
				`SELECT (SELECT count(*) FROM (SELECT * FROM ${file} EXCEPT ALL SELECT * FROM ${expected}))::INT AS extra,
				        (SELECT count(*) FROM (SELECT * FROM ${expected} EXCEPT ALL SELECT * FROM ${file}))::INT AS missing,
				        (SELECT count(*) FROM ${file})::INT AS rows,
				        (SELECT count(*) FROM ${expected})::INT AS expected`,
			)
		).getRowObjectsJS() as { extra: number; missing: number; rows: number; expected: number }[];
		// The file's own order (one file is read in order), compared with JavaScript's sort.
		const keys = (await conn.runAndReadAll(`SELECT address, id FROM ${file}`)).getRowObjectsJS() as {
			address: string;
			id: string;
		}[];
		const sorted = [...keys].sort((x, y) =>
			x.address === y.address ? (x.id < y.id ? -1 : x.id > y.id ? 1 : 0) : x.address < y.address ? -1 : 1,
		);
		const unique = new Set(keys.map((k) => `${k.address}/${k.id}`)).size === keys.length;
		return {
			...(counts as { extra: number; missing: number; rows: number; expected: number }),
			sorted: JSON.stringify(keys) === JSON.stringify(sorted) && unique,
		};
	} finally {
		conn.closeSync();
	}
}
