import { type ListResult, listRows, type Page } from "./list.js";
import type { Row, Store } from "./store.js";

export const BLOCK_COLUMNS =
	"number, hash, parent_hash, timestamp, nonce, gas_used, mix_hash, gas_limit, difficulty, extra_data, logs_bloom, state_root, sha3_uncles, receipts_root, total_difficulty, transactions_root, miner, base_fee_per_gas, size, transaction_count";

export async function findBlockByHash(store: Store, chain: string, hash: string): Promise<Row | undefined> {
	const [row] = await store.query(chain, `SELECT ${BLOCK_COLUMNS} FROM {blocks} WHERE hash = $hash`, { hash });
	return row;
}

export async function findBlockByNumber(store: Store, chain: string, number: number): Promise<Row | undefined> {
	const [row] = await store.query(chain, `SELECT ${BLOCK_COLUMNS} FROM {blocks} WHERE number = $number`, { number });
	return row;
}

/** Blocks of a range, paged by block number (the API pages `/blocks` by hash; the route maps it). */
export function listBlocks(store: Store, chain: string, page: Page): Promise<ListResult> {
	return listRows(
		store,
		chain,
		{ dataset: "blocks", columns: BLOCK_COLUMNS, where: "true", params: {}, key: "number", blockColumn: "number" },
		page,
	);
}
