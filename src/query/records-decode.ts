import { itemId } from "../extract/ids.js";
import { ADDRESS_FIELDS, type AddressDataset, type AddressLayout } from "../store/format/address-records.js";
import {
	BLOCK_RECORD_FIELDS,
	LOG_RECORD_FIELDS,
	LOG_SLIM_FIELDS,
	TX_RECORD_FIELDS,
	TX_SLIM_FIELDS,
} from "../store/format/lookup-records.js";
import { type Column, SCHEMAS } from "../store/format/schema.js";
import type { Row } from "./store/store.js";

/**
 * Lookup records (store/format/lookup-records.ts) and by-address records (address-records.ts)
 * back to the rows the columns' own queries return: the same names, the key put back, a log's
 * transaction context copied from its transaction. Values come back as JSON gives them (integers
 * as numbers, every uint256 and the block nonce as text), which the API's record shapes
 * (api/answers/records.ts) read alike.
 */
function fields(names: readonly string[], values: readonly unknown[], into: Row): Row {
	names.forEach((name, i) => {
		into[name] = values[i] ?? null;
	});
	return into;
}

/**
 * A transaction and its logs from its record. A slim record (TX_SLIM_FIELDS, its logs'
 * LOG_SLIM_FIELDS) gets its ids rebuilt here and its block's hash and timestamp left `undefined`
 * for fillBlockStamps (query/wallet-indexes.ts); a record written before holds them all.
 */
export function decodeTransactionRecord(hash: string, record: string): { tx: Row; logs: Row[] } {
	const values = JSON.parse(record) as unknown[];
	const slim = values.length === TX_SLIM_FIELDS.length + 1;
	const tx = fields(slim ? TX_SLIM_FIELDS : TX_RECORD_FIELDS, values, { transaction_hash: hash });
	const block = Number(tx.block_number);
	const index = Number(tx.transaction_index);
	if (slim) Object.assign(tx, { id: itemId(block, index, 0), block_hash: undefined, block_timestamp: undefined });
	const logs = ((values.at(-1) ?? []) as unknown[][]).map((l) => {
		const log = fields(slim ? LOG_SLIM_FIELDS : LOG_RECORD_FIELDS, l, {
			transaction_hash: hash,
			block_hash: tx.block_hash,
			block_number: tx.block_number,
			block_timestamp: tx.block_timestamp,
			origin: tx.from_address,
		});
		if (slim) log.id = itemId(block, index, Number(log.log_index));
		return log;
	});
	return { tx, logs };
}

/** A block from its record. */
export const decodeBlockRecord = (hash: string, record: string): Row =>
	fields(BLOCK_RECORD_FIELDS, JSON.parse(record) as unknown[], { hash });

const isBigint = (dataset: AddressDataset, f: string): boolean =>
	(SCHEMAS[dataset] as Record<string, Column>)[f]?.[0] === "BIGINT";

/**
 * A decoder of a by-address records kind's rows (`id, block_number, record`, as read) back to the
 * dataset's rows, with the JavaScript types its own columns read as
 * (BIGINT as bigint): a page is the same whichever file it came from. A wallet kind's block
 * fields are left `undefined`, in their place, for fillBlockStamps (query/wallet-indexes.ts).
 */
export function addressRecordDecoder(layout: AddressLayout): (row: Row) => Row {
	// Per page field: its position in the record, or -1 (the block's).
	const at = ADDRESS_FIELDS[layout.dataset].map((f) => (layout.record as readonly string[]).indexOf(f));
	const big = ADDRESS_FIELDS[layout.dataset].map((f) => isBigint(layout.dataset, f));
	const names = ADDRESS_FIELDS[layout.dataset];
	return (row) => {
		const values = JSON.parse(row.record as string) as unknown[];
		const out: Row = { id: row.id, block_number: row.block_number };
		names.forEach((name, i) => {
			const k = at[i] as number;
			if (k < 0) {
				out[name] = undefined;
				return;
			}
			const v = values[k] ?? null;
			out[name] = v !== null && big[i] ? BigInt(v as number) : v;
		});
		return out;
	};
}
