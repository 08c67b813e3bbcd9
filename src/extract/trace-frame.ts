import { BLOCK_LEVEL_TX_INDEX, itemId } from "./ids.js";
import type { BlockRow, TraceRow, TransactionRow } from "./rows.js";

/** A decoded frame before it is placed in its block: what both trace formats yield. */
export type Frame = Omit<
	TraceRow,
	"id" | "block_number" | "block_hash" | "block_timestamp" | "transaction_index" | "origin" | "trace_index" | "status"
>;

/**
 * Places decoded frames (pre-order within each transaction) in their block: item ids,
 * positions, the sending EOA, and status = 0 for a frame that failed or sits below one that did
 * (its effects were undone with the failing frame).
 */
export function placeFrames(frames: Frame[], block: BlockRow, txsByHash: Map<string, TransactionRow>): TraceRow[] {
	const positions = new Map<string, number>();
	const failed = new Set<string>();
	let rewards = 0;
	return frames.map((f) => {
		const tx = f.transaction_hash == null ? undefined : txsByHash.get(f.transaction_hash);
		const txKey = f.transaction_hash ?? "block";
		const position = tx ? (positions.get(txKey) ?? 0) : rewards++;
		if (tx) positions.set(txKey, position + 1);
		const path = `${txKey}:${f.trace_address.join(",")}`;
		const parent = `${txKey}:${f.trace_address.slice(0, -1).join(",")}`;
		const ok = f.error == null && !(f.trace_address.length > 0 && failed.has(parent));
		if (!ok) failed.add(path);
		const txIndex = tx ? tx.transaction_index : null;
		return {
			id: itemId(block.number, txIndex ?? BLOCK_LEVEL_TX_INDEX, position),
			block_number: block.number,
			block_hash: block.hash,
			block_timestamp: block.timestamp,
			transaction_index: txIndex,
			origin: tx ? tx.from_address : null,
			trace_index: position,
			status: ok ? 1 : 0,
			...f,
		};
	});
}
