import type { ColumnKind } from "../../query/sql/result-columns.js";

/*
 * The columns of list answers in the tabular formats (CSV, Arrow): each list route declares its
 * columns (flattened record fields, `header.gas_used`), and each column has one kind (ColumnKind,
 * query/sql/result-columns.ts), so an Arrow answer has the same schema on every page, the empty
 * one included, and a CSV answer always has its header row.
 */

/** Kinds by full column name, where the last part alone would say otherwise. */
const BY_PATH: Record<string, ColumnKind> = {
	"header.nonce": "uint64",
	"header.difficulty": "text",
	"header.total_difficulty": "text",
};

/** Kinds by the column's last part. */
const BY_NAME: Record<string, ColumnKind> = {
	block_number: "int",
	number: "int",
	timestamp: "int",
	block_timestamp: "int",
	seen_at_block_number: "int",
	index: "int",
	log_index: "int",
	transaction_count: "int",
	size: "int",
	gas: "int",
	gas_used: "int",
	gas_limit: "int",
	nonce: "int",
	tx_type: "int",
	sig_v: "int",
	decimals: "int",
	status: "bool",
	ghost: "bool",
	estimated_usd_value: "float",
	estimated_usd_price: "float",
	sale_price: "float",
	gas_range: "json",
	trace_address: "json",
	logs: "json",
	metadata: "json",
	events: "json",
};

/** The kind of column `name`: declared, or text. */
export const columnKind = (name: string): ColumnKind =>
	BY_PATH[name] ?? BY_NAME[name.slice(name.lastIndexOf(".") + 1)] ?? "text";

/** Whether `name` is a declared column kind (tests check every column of every list route is). */
export const isDeclared = (name: string): boolean =>
	name in BY_PATH ||
	name.slice(name.lastIndexOf(".") + 1) in BY_NAME ||
	TEXT_NAMES.has(name.slice(name.lastIndexOf(".") + 1));

/** Leaf names that are text by design (the default), listed so a new field is a decision. */
const TEXT_NAMES = new Set([
	"id",
	"hash",
	"parent_hash",
	"tx_hash",
	"block_hash",
	"origin",
	"miner",
	"mix_hash",
	"extra_data",
	"logs_bloom",
	"state_root",
	"sha3_uncles",
	"receipts_root",
	"transactions_root",
	"base_fee_per_gas",
	"contract",
	"op_code",
	"topic_0",
	"topic_1",
	"topic_2",
	"topic_3",
	"log_data",
	"to",
	"from",
	"value",
	"input",
	"output",
	"fee",
	"gas_price",
	"gas_fee_cap",
	"gas_tip_cap",
	"contract_address",
	"sig_r",
	"sig_s",
	"sender",
	"recipient",
	"token_id",
	"asset_type",
	"token_standard",
	"caller",
	"init_code_hash",
	"beneficiary",
	"trace_type",
	"call_type",
	"error",
	"value_raw",
	"value_calculated",
	"address",
	"symbol",
	"name",
	"standard",
	"amount",
	"owner",
	"sig_hash",
	"input_data",
	"output_data",
]);

/** An item's fields as flat columns (`header.gas_used`); json columns are kept whole. */
export function flattenItem(item: object, prefix = "", out: Record<string, unknown> = {}): Record<string, unknown> {
	for (const [k, v] of Object.entries(item)) {
		const key = prefix ? `${prefix}.${k}` : k;
		if (v !== null && typeof v === "object" && !Array.isArray(v) && columnKind(key) !== "json")
			flattenItem(v, key, out);
		else out[key] = v;
	}
	return out;
}

/** The columns of a record shape, in its field order: from one item built from an empty row. */
export const columnsOf = (sample: object): readonly string[] => Object.keys(flattenItem(sample));
