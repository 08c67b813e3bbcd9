/**
 * Item ids: `{block_number:016x}-{tx_index:04x}-{ordinal:08x}`, lowercase hex, so that ids
 * sort as strings in chain order (api-contract.md §5).
 *
 * Ordinals, per dataset:
 * - transactions: 0.
 * - logs: the log's block-wide log index.
 * - traces, contract_creations, self_destructs: the frame's pre-order position in its transaction.
 * - transfers: native transfers take the pre-order position of their frame (0 = the
 *   transaction's own value); token transfers take TOKEN_ORDINAL_BASE + log index, so a
 *   transaction's native transfers come before its token transfers.
 * - Block-level items with no transaction (block rewards in traces) use tx index 0xffff.
 */
export const TOKEN_ORDINAL_BASE = 0x8000_0000;
export const BLOCK_LEVEL_TX_INDEX = 0xffff;

export function itemId(blockNumber: number, txIndex: number, ordinal: number): string {
	if (txIndex > 0xffff || ordinal > 0xffff_ffff) {
		throw new RangeError(`item id out of range: tx ${txIndex}, ordinal ${ordinal}`);
	}
	return `${blockNumber.toString(16).padStart(16, "0")}-${txIndex.toString(16).padStart(4, "0")}-${ordinal
		.toString(16)
		.padStart(8, "0")}`;
}
