import { BLOCK_RECORD_FIELDS, LOG_RECORD_FIELDS, TX_RECORD_FIELDS } from "../store/format/lookup-records.js";
import type { Row } from "./store/store.js";

/**
 * Lookup records (store/format/lookup-records.ts) back to the rows the columns' own queries return: the
 * same names, the key put back, a log's transaction context copied from its transaction. Values
 * come back as JSON gives them (integers as numbers, every uint256 and the block nonce as text),
 * which the API's record shapes (api/records.ts) read alike.
 */
function fields(names: readonly string[], values: readonly unknown[], into: Row): Row {
	names.forEach((name, i) => {
		into[name] = values[i] ?? null;
	});
	return into;
}

/** A transaction and its logs from its record. */
export function decodeTransactionRecord(hash: string, record: string): { tx: Row; logs: Row[] } {
	const values = JSON.parse(record) as unknown[];
	const tx = fields(TX_RECORD_FIELDS, values, { transaction_hash: hash });
	const logs = ((values[TX_RECORD_FIELDS.length] ?? []) as unknown[][]).map((l) =>
		fields(LOG_RECORD_FIELDS, l, {
			transaction_hash: hash,
			block_hash: tx.block_hash,
			block_number: tx.block_number,
			block_timestamp: tx.block_timestamp,
			origin: tx.from_address,
		}),
	);
	return { tx, logs };
}

/** A block from its record. */
export const decodeBlockRecord = (hash: string, record: string): Row =>
	fields(BLOCK_RECORD_FIELDS, JSON.parse(record) as unknown[], { hash });
