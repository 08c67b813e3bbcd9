import { inList } from "./conditions.js";
import { everyChunkHas } from "./every-chunk-has.js";
import { type ListResult, listRows, type Page } from "./list.js";
import { decodeTransactionRecord } from "./records-decode.js";
import type { Params, Row, Snapshot } from "./store/store.js";
import { fillBlockStamps, walletRows } from "./wallet-indexes.js";

export const TX_COLUMNS =
	"id, transaction_hash, block_hash, block_number, block_timestamp, transaction_index, from_address, to_address, value, input, nonce, status, transaction_type, fee, gas_used, cumulative_gas_used, gas, gas_price, effective_gas_price, max_fee_per_gas, max_priority_fee_per_gas, contract_address, r, s, v";

export const LOG_COLUMNS =
	"id, transaction_hash, block_hash, block_number, block_timestamp, origin, address, topic_count, topic0, topic1, topic2, topic3, data, log_index";

export interface WalletTxFilter {
	address: string;
	direction?: "incoming" | "outgoing";
	counterparty?: string;
}

/** Transactions sent (`from`) or received (`to`) by an address. */
export function findWalletTransactions(db: Snapshot, f: WalletTxFilter, page: Page): Promise<ListResult> {
	const params: Params = {};
	const { where, indexes } = walletRows("transactions", f, [], params);
	return listRows(db, { dataset: "transactions", columns: TX_COLUMNS, where, params, indexes }, page);
}

/**
 * A transaction by hash with its logs: one read of its record (store/format/lookup-records.ts: two
 * columns of one small row group of the runs whose key filter admits the hash; a missing hash
 * usually reads no file at all) where every chunk has `transaction_records`; else, in folders
 * written before it until `npm run reindex`, the row from the older hash index or the
 * transactions files, then its logs from the logs files.
 */
export async function findTransactionWithLogs(
	db: Snapshot,
	hash: string,
): Promise<{ tx: Row; logs: Row[] } | undefined> {
	if (everyChunkHas(db, "transactions", "transaction_records")) {
		const [row] = await db.query(
			"SELECT record FROM {transaction_records} WHERE hash = $hash",
			{ hash },
			undefined,
			hash,
		);
		if (!row) return undefined;
		const found = decodeTransactionRecord(hash, row.record as string);
		await fillBlockStamps([found.tx, ...found.logs], db);
		return found;
	}
	const tx = await findTransaction(db, hash);
	return tx ? { tx, logs: await logsOfTransactions(db, [tx]) } : undefined;
}

/** A transaction by hash, without its logs (see findTransactionWithLogs). */
export async function findTransaction(db: Snapshot, hash: string): Promise<Row | undefined> {
	if (everyChunkHas(db, "transactions", "transaction_records")) return (await findTransactionWithLogs(db, hash))?.tx;
	const [row] = everyChunkHas(db, "transactions", "transactions_by_hash")
		? await db.query(`SELECT ${TX_COLUMNS} FROM {transactions_by_hash} WHERE hash = $hash`, { hash }, undefined, hash)
		: await db.query(`SELECT ${TX_COLUMNS} FROM {transactions} WHERE transaction_hash = $hash`, { hash });
	return row;
}

/** The logs of the given transactions (of one page), in chain order. */
export async function logsOfTransactions(db: Snapshot, txs: Row[]): Promise<Row[]> {
	if (txs.length === 0) return [];
	const numbers = txs.map((t) => Number(t.block_number));
	const window: [number, number] = [Math.min(...numbers), Math.max(...numbers)];
	const params: Record<string, string | number> = { start: window[0], end: window[1] };
	txs.forEach((t, i) => {
		params[`h${i}`] = t.transaction_hash as string;
	});
	const list = txs.map((_, i) => `$h${i}`).join(", ");
	return db.query(
		`SELECT ${LOG_COLUMNS} FROM {logs} WHERE block_number BETWEEN $start AND $end AND transaction_hash IN (${list}) ORDER BY id`,
		params,
		// Only the files of those blocks: a chain in many chunks must not open every logs file.
		window,
	);
}

export interface EventFilter {
	contracts?: string[];
	/** Per position 0..3: any of these values. */
	topics: (string[] | undefined)[];
	origin?: string;
	transaction?: string;
	/** Number of topics (the LOG0..LOG4 opcode that emitted the log). */
	topicCount?: number;
}

/**
 * Logs by emitting contract, topics, origin or transaction. `columns`: what each row holds,
 * LOG_COLUMNS by default; with others, `id` among them (the paging reads it).
 */
export function findEvents(db: Snapshot, f: EventFilter, page: Page, columns = LOG_COLUMNS): Promise<ListResult> {
	const params: Params = {};
	const where: string[] = [];
	if (f.contracts?.length) where.push(inList("address", "contract", f.contracts, params));
	f.topics.forEach((values, i) => {
		if (values?.length) where.push(inList(`topic${i}`, `topic${i}_`, values, params));
	});
	if (f.origin) {
		params.origin = f.origin;
		where.push("origin = $origin");
	}
	if (f.transaction) {
		params.tx = f.transaction;
		where.push("transaction_hash = $tx");
	}
	if (f.topicCount !== undefined) {
		params.topic_count = f.topicCount;
		where.push("topic_count = $topic_count");
	}
	return listRows(db, { dataset: "logs", columns, where: where.join(" AND ") || "true", params }, page);
}
