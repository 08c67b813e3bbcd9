import { type AddressDataset, recordRelationSql } from "../store/format/address-records.js";
import type { IndexName } from "../store/format/indexes.js";
import type { IndexSource } from "./list.js";
import { decodeAddressRecord } from "./records-decode.js";

/** The by-address index kinds of each dataset: records first, then the whole-row kind they replaced. */
const KINDS: Record<AddressDataset, readonly [records: IndexName, rows: IndexName]> = {
	transfers: ["transfer_records_by_address", "transfers_by_address"],
	transactions: ["transaction_records_by_address", "transactions_by_address"],
};

/**
 * Where a wallet's rows of `dataset` can be read from, `where` (over the dataset's columns and
 * `address`) selecting them: its by-address records (store/format/address-records.ts: the page
 * reads `id, block_number, record` and decodes the record; filters read its fields in SQL), or
 * in a folder not yet reindexed the whole-row index they replaced.
 */
export function walletIndexes(dataset: AddressDataset, where: string, address: string): IndexSource[] {
	const [records, rows] = KINDS[dataset];
	return [
		{
			name: records,
			from: recordRelationSql(dataset, `{${records}}`),
			where,
			key: address,
			columns: "id, block_number, record",
			decode: (row) => decodeAddressRecord(dataset, row),
		},
		{ name: rows, where, key: address },
	];
}
