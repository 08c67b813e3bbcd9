import { TX_RECORD_FIELDS } from "./lookup-records.js";
import { SCHEMAS } from "./schema.js";

/**
 * By-address records: a wallet's rows (its transfers, its transactions) as `address, id,
 * block_number`, a few filter columns (FILTER_COLUMNS) and `record`, the row pre-encoded as one
 * JSON array, sorted by address and id (indexes.ts `transfer_records_by_address`,
 * `transaction_records_by_address`). A wallet's page reads `id, block_number, record` of the row
 * group(s) holding it instead of 15 or 25 columns: measured on M's newest
 * by-address part (issue 26, BENCHMARKS.md "third figures"), a quiet wallet's lookup 1.77-1.89 ms
 * in groups of 2,048 against 5.2-5.7 for the 15 columns in groups of 4,096; over the whole of M
 * 1.5% more bytes than the whole rows (2,068 against 2,037 MiB for transfers; zstd already folds
 * the address repeated inside a record: blanking it saved 2.4%, not kept).
 * `block_number` stays a column: a page's windows prune on it; `id` too: pages sort and resume on it.
 *
 * A page's direction, asset and contract filters read the filter columns; the rarer ones
 * (counterparty, token id, origin) read the record's fields in SQL (recordRelationSql), after the
 * address has pruned the file to the wallet's rows; the page itself is decoded in JS
 * (query/records-decode.ts). On M the records with their filter columns take 6.4% more bytes than
 * the whole rows did (BENCHMARKS.md "fourth figures").
 */

/** A wallet transfer's fields in its record, in order: the API's transfer columns but id and block. */
export const TRANSFER_ADDRESS_FIELDS = [
	"transaction_hash",
	"block_hash",
	"block_timestamp",
	"origin",
	"contract",
	"sender",
	"recipient",
	"value",
	"token_id",
	"batch_values",
	"batch_token_ids",
	"asset_type",
	"token_standard",
] as const;

/**
 * A wallet transaction's fields in its record, in order: the API's transaction columns but id and
 * block, as a lookup record's fields (lookup-records.ts) with the hash first.
 */
export const TRANSACTION_ADDRESS_FIELDS = [
	"transaction_hash",
	...TX_RECORD_FIELDS.filter((f) => f !== "id" && f !== "block_number"),
] as const;

/** The record fields of each by-address records index's source dataset. */
export const ADDRESS_FIELDS = {
	transfers: TRANSFER_ADDRESS_FIELDS,
	transactions: TRANSACTION_ADDRESS_FIELDS,
} as const;
export type AddressDataset = keyof typeof ADDRESS_FIELDS;

/**
 * Columns kept beside the record (the record holds them too), for the filters a page may apply to
 * every row of a busy wallet: reading the field out of each record's JSON instead took a busy
 * wallet's ERC-20 page 218-260 ms against 20 (M, a wallet with 450,000 rows and no ERC-20 of its
 * own). Short and repetitive, so their bytes are few. `side` is which side of the row the address
 * is: 'out' (the sender, or from), 'in' (the recipient, or to), 'self' (both).
 */
export const FILTER_COLUMNS = {
	transfers: { side: "VARCHAR", asset_type: "VARCHAR", token_standard: "VARCHAR", contract: "VARCHAR" },
	transactions: { side: "VARCHAR" },
} as const;

/** The columns of a by-address records file of `dataset`. */
export const addressRecordColumns = (dataset: AddressDataset): Record<string, string> => ({
	address: "VARCHAR",
	id: "VARCHAR",
	block_number: "BIGINT",
	...FILTER_COLUMNS[dataset],
	record: "VARCHAR",
});

/**
 * Each row of `src` once per address it involves (`a`, then `b` when it differs, so a
 * self-transfer appears once), as addressRecordColumns.
 */
export const addressRecordsSql =
	(dataset: AddressDataset, [a, b]: readonly [string, string]) =>
	(src: string): string => {
		const record = `json_array(${ADDRESS_FIELDS[dataset].map((f) => `"${f}"`).join(", ")})::VARCHAR AS record`;
		const kept = Object.keys(FILTER_COLUMNS[dataset])
			.filter((c) => c !== "side")
			.map((c) => `"${c}", `)
			.join("");
		return `SELECT ${a} AS address, id, block_number, CASE WHEN ${b} = ${a} THEN 'self' ELSE 'out' END AS side, ${kept}${record} FROM ${src} WHERE ${a} IS NOT NULL
		 UNION ALL SELECT ${b} AS address, id, block_number, 'in' AS side, ${kept}${record} FROM ${src} WHERE ${b} IS NOT NULL AND ${b} IS DISTINCT FROM ${a}`;
	};

/** The condition on `side` for a wallet's rows of one direction (`out`: it sent; `in`: it received). */
export const sideSql = (direction: "out" | "in"): string => `side IN ('${direction}', 'self')`;

/** SQL of field `f` of `dataset`'s record, as its dataset column's type (JSON null → NULL). */
function fieldSql(dataset: AddressDataset, f: string, i: number): string {
	const type = (SCHEMAS[dataset] as Record<string, readonly [string, string]>)[f]?.[0] ?? "VARCHAR";
	if (type === "VARCHAR") return `record->>'$[${i}]'`;
	if (type.endsWith("[]")) return `CAST(record->'$[${i}]' AS ${type})`;
	return `CAST(record->>'$[${i}]' AS ${type})`;
}

/**
 * `rel` (a by-address records relation, e.g. `{transfer_records_by_address}`) with its record's
 * fields as columns of their datasets' types (the filter columns read as stored): for SQL that
 * filters or sums on them. DuckDB computes only the fields a statement names, and only on the
 * rows the address filter (pushed into the scan) leaves.
 */
export const recordRelationSql = (dataset: AddressDataset, rel: string): string => {
	const kept = Object.keys(FILTER_COLUMNS[dataset]);
	const fields = ADDRESS_FIELDS[dataset].flatMap((f, i) =>
		kept.includes(f) ? [] : [`${fieldSql(dataset, f, i)} AS "${f}"`],
	);
	return `(SELECT address, id, block_number, ${kept.map((c) => `"${c}"`).join(", ")}, record, ${fields.join(", ")} FROM ${rel})`;
};
