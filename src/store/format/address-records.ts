import { TX_RECORD_FIELDS } from "./lookup-records.js";
import { SCHEMAS } from "./schema.js";

/**
 * By-address records: a wallet's rows (its transfers, its transactions, the contracts it created)
 * as `address, id, block_number`, a few filter columns (FILTER_COLUMNS) and `record`, the row's
 * fields pre-encoded as one JSON array, sorted by address and id (indexes.ts `wallet_transfers`,
 * `wallet_transactions`, `wallet_creations`). A wallet's page reads `id, block_number, record` of
 * the row group(s) holding it instead of 15 or 25 columns: measured on M's newest
 * by-address part (issue 26, BENCHMARKS.md "third figures"), a quiet wallet's lookup 1.77-1.89 ms
 * in groups of 2,048 against 5.2-5.7 for the 15 columns in groups of 4,096.
 * `block_number` stays a column: a page's windows prune on it; `id` too: pages sort and resume on it.
 *
 * A page's direction, asset and contract filters read the filter columns; the rarer ones
 * (counterparty, token id, origin) read the record's fields in SQL (recordRelationSql), after the
 * address has pruned the file to the wallet's rows; the page itself is decoded in JS
 * (query/records-decode.ts), the block's hash and timestamp put back from the chain's blocks
 * (BLOCK_STAMP_FIELDS). The first records (`transfer_records_by_address`,
 * `transaction_records_by_address`, session 6) held every field, those too: 6.4% more bytes
 * than the whole rows they replaced (BENCHMARKS.md "fourth figures"); the wallet records are
 * those less the block's fields (BENCHMARKS.md "fifth figures").
 */

/** A wallet transfer's fields as a page lists them, in order: the API's transfer columns but id and block. */
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
 * A wallet transaction's fields as a page lists them, in order: the API's transaction columns but
 * id and block, as a lookup record's fields (lookup-records.ts) with the hash first.
 */
export const TRANSACTION_ADDRESS_FIELDS = [
	"transaction_hash",
	...TX_RECORD_FIELDS.filter((f) => f !== "id" && f !== "block_number"),
] as const;

/** A contract creation's fields as a caller's page lists them, in order: the API's creation columns but id and block. */
export const CREATION_ADDRESS_FIELDS = [
	"transaction_hash",
	"block_hash",
	"block_timestamp",
	"origin",
	"contract_address",
	"caller",
	"value",
	"op_code",
	"trace_address",
	"init_code_hash",
	"gas_used",
] as const;

/** The page's fields of each by-address records index's source dataset. */
export const ADDRESS_FIELDS = {
	transfers: TRANSFER_ADDRESS_FIELDS,
	transactions: TRANSACTION_ADDRESS_FIELDS,
	contract_creations: CREATION_ADDRESS_FIELDS,
} as const;
export type AddressDataset = keyof typeof ADDRESS_FIELDS;

/**
 * Columns kept beside the record, for the filters a page may apply to every row of a busy wallet:
 * reading the field out of each record's JSON instead took a busy wallet's ERC-20 page 218-260 ms
 * against 20 (M, a wallet with 450,000 rows and no ERC-20 of its own). Short and repetitive, so
 * their bytes are few. `side` is which side of the row the address is: 'out' (the sender, or
 * from), 'in' (the recipient, or to), 'self' (both).
 */
export const FILTER_COLUMNS = {
	transfers: { side: "VARCHAR", asset_type: "VARCHAR", token_standard: "VARCHAR", contract: "VARCHAR" },
	transactions: { side: "VARCHAR" },
	// One side (the caller): every row is the address's own.
	contract_creations: {},
} as const;

/**
 * A block's fields every row repeats: the wallet kinds leave them out of the record and the reader
 * puts them back from the chain's blocks (query/store/block-stamps.ts). Measured on M's
 * by-address parts (issue 26, BENCHMARKS.md "fifth figures"): the block hash, 32 random bytes
 * that zstd cannot fold, was a quarter of a record's bytes.
 */
export const BLOCK_STAMP_FIELDS = ["block_hash", "block_timestamp"] as const;

/**
 * How a by-address records kind stores a row: `record`, the fields in its JSON array, in order
 * (the filter columns beside it hold copies of theirs); `stamped`: the block's fields are left
 * out, to be put back from the blocks. The filter columns stay in the record too: a page that
 * read them as columns instead took 1.2 ms more at M (three more columns of each row group:
 * 5.11 against 3.93 ms, median and cold wallets) to save 5% of the bytes.
 */
export interface AddressLayout {
	dataset: AddressDataset;
	record: readonly string[];
	stamped: boolean;
	/** The filter columns kept beside the record (FILTER_COLUMNS of its dataset, or fewer). */
	filters: Readonly<Record<string, string>>;
}

/** The first records (`transfer_records_by_address`, `transaction_records_by_address`): every field in the record. */
const wholeRecord = (dataset: AddressDataset): AddressLayout => ({
	dataset,
	record: ADDRESS_FIELDS[dataset],
	stamped: false,
	filters: FILTER_COLUMNS[dataset],
});
/** Wallet records (`wallet_transfers`, `wallet_transactions`, `wallet_creations`): without the block's fields. */
const walletRecord = (dataset: AddressDataset): AddressLayout => ({
	dataset,
	record: ADDRESS_FIELDS[dataset].filter((f) => !(BLOCK_STAMP_FIELDS as readonly string[]).includes(f)),
	stamped: true,
	filters: FILTER_COLUMNS[dataset],
});

/**
 * A token's transfers (`token_transfers`), keyed by their contract: a wallet transfer's record,
 * beside the asset filters only (one side: no `side`; the contract is the key).
 */
const tokenRecord: AddressLayout = {
	...walletRecord("transfers"),
	filters: { asset_type: "VARCHAR", token_standard: "VARCHAR" },
};

/** The layout of each by-address records kind. */
export const ADDRESS_LAYOUTS = {
	wallet_transfers: walletRecord("transfers"),
	token_transfers: tokenRecord,
	wallet_transactions: walletRecord("transactions"),
	wallet_creations: walletRecord("contract_creations"),
	transfer_records_by_address: wholeRecord("transfers"),
	transaction_records_by_address: wholeRecord("transactions"),
} as const satisfies Record<string, AddressLayout>;
export type AddressRecordsKind = keyof typeof ADDRESS_LAYOUTS;

/** The columns of a by-address records file of `layout`. */
export const addressRecordColumns = (layout: AddressLayout): Record<string, string> => ({
	address: "VARCHAR",
	id: "VARCHAR",
	block_number: "BIGINT",
	...layout.filters,
	record: "VARCHAR",
});

/**
 * Each row of `src` once per address it involves (`a`, then `b` when it differs, so a
 * self-transfer appears once; or `a` alone), as addressRecordColumns with the record of `layout`.
 */
export const addressRecordsSql =
	(layout: AddressLayout, [a, b]: readonly [string, string?]) =>
	(src: string): string => {
		const record = `json_array(${layout.record.map((f) => `"${f}"`).join(", ")})::VARCHAR AS record`;
		const kept = Object.keys(layout.filters)
			.filter((c) => c !== "side")
			.map((c) => `"${c}", `)
			.join("");
		if (b === undefined)
			return `SELECT ${a} AS address, id, block_number, ${kept}${record} FROM ${src} WHERE ${a} IS NOT NULL`;
		return `SELECT ${a} AS address, id, block_number, CASE WHEN ${b} = ${a} THEN 'self' ELSE 'out' END AS side, ${kept}${record} FROM ${src} WHERE ${a} IS NOT NULL
		 UNION ALL SELECT ${b} AS address, id, block_number, 'in' AS side, ${kept}${record} FROM ${src} WHERE ${b} IS NOT NULL AND ${b} IS DISTINCT FROM ${a}`;
	};

/** The condition on `side` for a wallet's rows of one direction (`out`: it sent; `in`: it received). */
export const sideSql = (direction: "out" | "in"): string => `side IN ('${direction}', 'self')`;

/** SQL of field `f` of `dataset`'s record, at position `i`, as its dataset column's type (JSON null → NULL). */
function fieldSql(dataset: AddressDataset, f: string, i: number): string {
	const type = (SCHEMAS[dataset] as Record<string, readonly [string, string]>)[f]?.[0] ?? "VARCHAR";
	if (type === "VARCHAR") return `record->>'$[${i}]'`;
	if (type.endsWith("[]")) return `CAST(record->'$[${i}]' AS ${type})`;
	return `CAST(record->>'$[${i}]' AS ${type})`;
}

/**
 * `rel` (a by-address records relation of `layout`, e.g. `{wallet_transfers}`) with its record's
 * fields as columns of their datasets' types (the filter columns read as stored; the block's
 * fields of a wallet kind are not there): for SQL that filters or sums on them. DuckDB computes
 * only the fields a statement names, and only on the rows the address filter (pushed into the
 * scan) leaves.
 */
export const recordRelationSql = (layout: AddressLayout, rel: string): string => {
	const kept = Object.keys(layout.filters);
	const fields = layout.record.flatMap((f, i) =>
		kept.includes(f) ? [] : [`${fieldSql(layout.dataset, f, i)} AS "${f}"`],
	);
	const columns = ["address", "id", "block_number", ...kept.map((c) => `"${c}"`), "record", ...fields];
	return `(SELECT ${columns.join(", ")} FROM ${rel})`;
};
