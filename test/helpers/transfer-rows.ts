import { itemId, TOKEN_ORDINAL_BASE } from "../../src/extract/ids.js";
import type { TransferRow } from "../../src/extract/rows.js";

/**
 * The `i`-th ERC-20 transfer of a synthetic chunk for the writer's tests: 100 to a block from
 * block `firstBlock`, each the only log of its transaction, worth i + 1; the token, the parties
 * and the transaction's hash as the test draws them.
 */
export function erc20Transfer(
	i: number,
	firstBlock: number,
	t: { transactionHash: string; origin: string; contract: string; sender: string; recipient: string },
): TransferRow {
	return {
		id: itemId(firstBlock + Math.floor(i / 100), i % 100, TOKEN_ORDINAL_BASE),
		block_number: firstBlock + Math.floor(i / 100),
		block_hash: `0x${"ab".repeat(32)}`,
		block_timestamp: 1_700_000_000,
		transaction_index: i % 100,
		transaction_hash: t.transactionHash,
		origin: t.origin,
		asset_type: "ft",
		token_standard: "erc20",
		contract: t.contract,
		sender: t.sender,
		recipient: t.recipient,
		value: String(i + 1),
		token_id: null,
		batch_values: null,
		batch_token_ids: null,
		operator: null,
		log_index: i % 100,
		trace_index: null,
	};
}
