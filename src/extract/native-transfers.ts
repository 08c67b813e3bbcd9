import { itemId } from "./ids.js";
import type { TraceRow, TransactionRow, TransferRow } from "./rows.js";

/** Frame kinds that move value from `from_address` to `to_address`. CALLCODE and DELEGATECALL
 * run foreign code in the caller's own account, so no value changes hands in them. */
const VALUE_MOVING_CALLS = new Set(["call", null]);

/**
 * Native-currency transfers. With traces: every successful frame that moves value (the
 * top-level call is the transaction's own value; then internal calls, creates and
 * self-destructs). Without traces: only each transaction's own value. Never from a failed
 * transaction or a frame that was reverted, never zero-value.
 */
export function deriveNativeTransfers(txs: TransactionRow[], traces: TraceRow[] | null): TransferRow[] {
	if (traces == null) return txs.flatMap((tx) => txValueTransfer(tx));
	const txsByHash = new Map(txs.map((tx) => [tx.transaction_hash, tx]));
	const out: TransferRow[] = [];
	for (const t of traces) {
		const tx = t.transaction_hash == null ? undefined : txsByHash.get(t.transaction_hash);
		if (!tx || tx.status === 0 || t.status !== 1) continue;
		if (t.value == null || t.value === "0" || t.from_address == null || t.to_address == null) continue;
		if (t.trace_type === "call" && !VALUE_MOVING_CALLS.has(t.call_type)) continue;
		if (t.trace_type === "reward") continue;
		out.push(nativeRow(tx, t.trace_index, t.from_address, t.to_address, t.value));
	}
	return out;
}

function txValueTransfer(tx: TransactionRow): TransferRow[] {
	const recipient = tx.to_address ?? tx.contract_address;
	// Pre-Byzantium receipts have no status (null): such transactions are taken as successful.
	if (tx.value === "0" || tx.status === 0 || recipient == null) return [];
	return [nativeRow(tx, 0, tx.from_address, recipient, tx.value)];
}

function nativeRow(tx: TransactionRow, traceIndex: number, sender: string, recipient: string, value: string) {
	return {
		id: itemId(tx.block_number, tx.transaction_index, traceIndex),
		block_number: tx.block_number,
		block_hash: tx.block_hash,
		block_timestamp: tx.block_timestamp,
		transaction_index: tx.transaction_index,
		transaction_hash: tx.transaction_hash,
		origin: tx.from_address,
		asset_type: "native",
		token_standard: "native",
		contract: null,
		sender,
		recipient,
		value,
		token_id: null,
		batch_values: null,
		batch_token_ids: null,
		operator: null,
		log_index: null,
		trace_index: traceIndex,
	} satisfies TransferRow;
}
