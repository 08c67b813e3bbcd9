import { everyChunkHas } from "./every-chunk-has.js";
import { type ListResult, listRows, type Page } from "./list.js";
import { decodeBlockRecord } from "./records-decode.js";
import type { Row, Snapshot } from "./store/store.js";

/** The columns a block record needs. The nonce (DECIMAL(20,0): it can pass 2^63) as exact text: the
 * DuckDB client converts DECIMAL to a JS double, which rounds above 2^53. */
export const BLOCK_COLUMNS =
	"number, hash, parent_hash, timestamp, nonce::VARCHAR AS nonce, gas_used, mix_hash, gas_limit, difficulty, extra_data, logs_bloom, state_root, sha3_uncles, receipts_root, total_difficulty, transactions_root, miner, base_fee_per_gas, size, transaction_count";

/**
 * A block by hash: one read of its record where every chunk has `block_records` (see
 * findTransactionWithLogs); else the older hash index, or the blocks files.
 */
export async function findBlockByHash(db: Snapshot, hash: string): Promise<Row | undefined> {
	if (everyChunkHas(db, "blocks", "block_records")) {
		const [row] = await db.query("SELECT record FROM {block_records} WHERE hash = $hash", { hash }, undefined, hash);
		return row ? decodeBlockRecord(hash, row.record as string) : undefined;
	}
	const [row] = everyChunkHas(db, "blocks", "blocks_by_hash")
		? await db.query(`SELECT ${BLOCK_COLUMNS} FROM {blocks_by_hash} WHERE hash = $hash`, { hash }, undefined, hash)
		: await db.query(`SELECT ${BLOCK_COLUMNS} FROM {blocks} WHERE hash = $hash`, { hash });
	return row;
}

/** A block that was reorged out of the chain, by hash. */
export async function findGhostBlock(db: Snapshot, hash: string): Promise<Row | undefined> {
	const [row] = await db.query(`SELECT ${BLOCK_COLUMNS} FROM {ghost_blocks} WHERE hash = $hash LIMIT 1`, { hash });
	return row;
}

/** The newest stored block, or undefined while there is none; kept per manifest state (it changes only with it). */
export function latestBlock(db: Snapshot): Promise<Row | undefined> {
	return db.memo("latest-block", async () => {
		const head = db.head();
		return head == null ? undefined : findBlockByNumber(db, head);
	});
}

export async function findBlockByNumber(db: Snapshot, number: number): Promise<Row | undefined> {
	const [row] = await db.query(`SELECT ${BLOCK_COLUMNS} FROM {blocks} WHERE number = $number`, { number }, [
		number,
		number,
	]);
	return row;
}

/**
 * Blocks of a range, paged by block number (the API pages `/blocks` by hash; the route maps it).
 * `columns`: what each row holds, BLOCK_COLUMNS by default; with others, `number` and `hash`
 * among them (the paging reads them).
 */
export function listBlocks(db: Snapshot, page: Page, columns = BLOCK_COLUMNS): Promise<ListResult> {
	return listRows(
		db,
		{
			dataset: "blocks",
			columns,
			where: "true",
			params: {},
			key: "number",
			blockColumn: "number",
			rowsPerBlock: 1,
		},
		page,
	);
}
