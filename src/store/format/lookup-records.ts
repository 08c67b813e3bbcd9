import type { DatasetName } from "../../extract/rows.js";

/**
 * Lookup records: what `/txs/{hash}` and `/blocks/{hash}` answer, pre-encoded at write time as
 * one JSON array per row beside its key, in the hash indexes `transaction_records` and
 * `block_records` (indexes.ts). A lookup then reads two columns of one row group instead of
 * decoding 25 columns (about 1.3 ms a column, measured on M: issue 26) and, for a transaction, a
 * second read of the logs dataset (33-43 ms at M, half of every tx lookup): its logs travel in its
 * record. Arrays rather than objects: the names are the same in every row, so they are written
 * once here instead of millions of times on disk. The decoder (query/records-decode.ts) maps the
 * positions back to these names, so the rows it returns are those of the columns' own query.
 *
 * Key columns are left out of the record (the lookup already knows its hash), and so is a log's
 * transaction context (its transaction's hash, block, timestamp and sender). A transaction's record
 * also leaves out what the reader rebuilds (TX_SLIM_FIELDS): its block's hash and timestamp (from
 * the blocks files, as the wallet records: query/store/block-stamps.ts) and the ids of it and its
 * logs (`itemId` of its block, index and a log's index: extract/ids.ts).
 */

/** A transaction record's fields, in order (the transaction_hash is the key). */
export const TX_RECORD_FIELDS = [
	"id",
	"block_hash",
	"block_number",
	"block_timestamp",
	"transaction_index",
	"from_address",
	"to_address",
	"value",
	"input",
	"nonce",
	"status",
	"transaction_type",
	"fee",
	"gas_used",
	"cumulative_gas_used",
	"gas",
	"gas_price",
	"effective_gas_price",
	"max_fee_per_gas",
	"max_priority_fee_per_gas",
	"contract_address",
	"r",
	"s",
	"v",
] as const;

/**
 * The fields a transaction's record holds, in order: TX_RECORD_FIELDS less those the reader
 * rebuilds. The block hash is 32 random bytes in every record that zstd cannot fold (rows sorted
 * by hash put no two of a block side by side); with the timestamp and the ids, about 15% of the
 * index's bytes (BENCHMARKS.md). Records written before (every field of TX_RECORD_FIELDS, each
 * log's id) still decode: the decoder tells them apart by their length.
 */
export const TX_SLIM_FIELDS = TX_RECORD_FIELDS.filter(
	(f) => f !== "id" && f !== "block_hash" && f !== "block_timestamp",
) as readonly Exclude<(typeof TX_RECORD_FIELDS)[number], "id" | "block_hash" | "block_timestamp">[];

/** A log's own fields inside its transaction's record, in order. */
export const LOG_RECORD_FIELDS = [
	"id",
	"address",
	"topic_count",
	"topic0",
	"topic1",
	"topic2",
	"topic3",
	"data",
	"log_index",
] as const;

/** A log's fields inside a slim transaction record (TX_SLIM_FIELDS): its id is rebuilt. */
export const LOG_SLIM_FIELDS = LOG_RECORD_FIELDS.filter((f) => f !== "id");

/** A block record's fields, in order (the hash is the key); the nonce as exact text (DECIMAL(20,0) can pass 2^53). */
export const BLOCK_RECORD_FIELDS = [
	"number",
	"parent_hash",
	"timestamp",
	"nonce",
	"gas_used",
	"mix_hash",
	"gas_limit",
	"difficulty",
	"extra_data",
	"logs_bloom",
	"state_root",
	"sha3_uncles",
	"receipts_root",
	"total_difficulty",
	"transactions_root",
	"miner",
	"base_fee_per_gas",
	"size",
	"transaction_count",
] as const;

const list = (alias: string, fields: readonly string[], cast: Record<string, string> = {}) =>
	fields.map((f) => `${alias}."${f}"${cast[f] ?? ""}`).join(", ");

/**
 * Each transaction of `src` as (hash, record): its fields (TX_SLIM_FIELDS), then its logs (from
 * `rel("logs")`) in log order as arrays of their own fields (LOG_SLIM_FIELDS; [] when it has none).
 */
export const transactionRecordsSql = (src: string, rel: (d: DatasetName) => string): string =>
	`SELECT t.transaction_hash AS hash,
	   json_array(${list("t", TX_SLIM_FIELDS)}, coalesce(l.logs, []))::VARCHAR AS record
	 FROM ${src} t LEFT JOIN (
	   SELECT g.transaction_hash, list(json_array(${list("g", LOG_SLIM_FIELDS)}) ORDER BY g.log_index) AS logs
	   FROM ${rel("logs")} g GROUP BY g.transaction_hash
	 ) l ON l.transaction_hash = t.transaction_hash`;

/** Each block of `src` as (hash, record). */
export const blockRecordsSql = (src: string): string =>
	`SELECT b.hash, json_array(${list("b", BLOCK_RECORD_FIELDS, { nonce: "::VARCHAR" })})::VARCHAR AS record FROM ${src} b`;

/** The columns of a records index file. */
export const RECORD_COLUMNS = { hash: "VARCHAR", record: "VARCHAR" } as const;
