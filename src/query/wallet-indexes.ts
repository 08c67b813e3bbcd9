import { type AddressDataset, recordRelationSql, sideSql } from "../store/format/address-records.js";
import type { IndexName } from "../store/format/indexes.js";
import { sideConditions } from "./conditions.js";
import type { IndexSource } from "./list.js";
import { decodeAddressRecord } from "./records-decode.js";
import type { Params } from "./store/store.js";

/** The by-address index kinds of each dataset: records first, then the whole-row kind they replaced. */
const KINDS: Record<AddressDataset, readonly [records: IndexName, rows: IndexName]> = {
	transfers: ["transfer_records_by_address", "transfers_by_address"],
	transactions: ["transaction_records_by_address", "transactions_by_address"],
};
/** The dataset's two sides (sender and recipient, from and to). */
const SIDES: Record<AddressDataset, readonly [string, string]> = {
	transfers: ["sender", "recipient"],
	transactions: ["from_address", "to_address"],
};

export interface WalletSides {
	address: string;
	direction?: "incoming" | "outgoing";
	counterparty?: string;
}

/**
 * A wallet's rows of `dataset`: the condition on the dataset's own rows, and the index files
 * that hold them, each with its condition. `rest`: the page's other conditions, over the
 * dataset's columns. Its by-address records (store/format/address-records.ts) come first: the
 * page reads `id, block_number, record` and decodes the record; the direction reads the `side`
 * column (every row there is the wallet's: no condition without a direction), the other filters
 * their columns or the record's fields in SQL. Then, in a folder not yet reindexed, the
 * whole-row index they replaced.
 */
export function walletRows(
	dataset: AddressDataset,
	f: WalletSides,
	rest: readonly string[],
	params: Params,
): { where: string; indexes: IndexSource[] } {
	const [mine, theirs] = sideConditions(SIDES[dataset], f, params);
	const where = [mine as string, ...(theirs ? [theirs] : []), ...rest];
	const side = f.direction ? [sideSql(f.direction === "outgoing" ? "out" : "in")] : [];
	const [records, rows] = KINDS[dataset];
	return {
		where: where.join(" AND "),
		indexes: [
			{
				name: records,
				from: recordRelationSql(dataset, `{${records}}`),
				where: ["address = $address", ...side, ...(theirs ? [theirs] : []), ...rest].join(" AND "),
				key: f.address,
				columns: "id, block_number, record",
				decode: (row) => decodeAddressRecord(dataset, row),
			},
			{ name: rows, where: ["address = $address", ...where].join(" AND "), key: f.address },
		],
	};
}
