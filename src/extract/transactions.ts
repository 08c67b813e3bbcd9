import type { RpcReceipt, RpcTransaction } from "../rpc/types.js";
import { hexToDecimal, hexToDecimalOrNull, hexToNumber, hexToNumberOrNull, lower } from "../util/hex.js";
import { itemId } from "./ids.js";
import type { BlockRow, LogRow, TransactionRow } from "./rows.js";

/** Decodes a transaction and its receipt (the caller has checked that they belong together). */
export function decodeTransaction(tx: RpcTransaction, receipt: RpcReceipt, block: BlockRow): TransactionRow {
	const index = hexToNumber(tx.transactionIndex);
	const gasUsed = hexToNumber(receipt.gasUsed);
	const effectiveGasPrice = receipt.effectiveGasPrice ?? impliedGasPrice(tx, block);
	return {
		id: itemId(block.number, index, 0),
		block_number: block.number,
		block_hash: block.hash,
		block_timestamp: block.timestamp,
		transaction_index: index,
		transaction_hash: tx.hash.toLowerCase(),
		nonce: hexToNumber(tx.nonce),
		from_address: tx.from.toLowerCase(),
		to_address: lower(tx.to),
		value: hexToDecimal(tx.value),
		input: tx.input.toLowerCase(),
		gas: hexToNumber(tx.gas),
		gas_price: hexToDecimalOrNull(tx.gasPrice),
		max_fee_per_gas: hexToDecimalOrNull(tx.maxFeePerGas),
		max_priority_fee_per_gas: hexToDecimalOrNull(tx.maxPriorityFeePerGas),
		max_fee_per_blob_gas: hexToDecimalOrNull(tx.maxFeePerBlobGas),
		blob_versioned_hashes: tx.blobVersionedHashes?.map((h) => h.toLowerCase()) ?? null,
		transaction_type: tx.type == null ? 0 : hexToNumber(tx.type),
		tx_chain_id: hexToDecimalOrNull(tx.chainId),
		r: lower(tx.r),
		s: lower(tx.s),
		// Typed transactions may carry only yParity.
		v: hexToDecimalOrNull(tx.v ?? tx.yParity),
		status: hexToNumberOrNull(receipt.status),
		root: lower(receipt.root),
		gas_used: gasUsed,
		cumulative_gas_used: hexToNumber(receipt.cumulativeGasUsed),
		effective_gas_price: hexToDecimalOrNull(effectiveGasPrice),
		fee: effectiveGasPrice == null ? null : (BigInt(gasUsed) * BigInt(effectiveGasPrice)).toString(),
		contract_address: lower(receipt.contractAddress),
		logs_count: receipt.logs.length,
		blob_gas_used: hexToNumberOrNull(receipt.blobGasUsed),
		blob_gas_price: hexToDecimalOrNull(receipt.blobGasPrice),
	};
}

/** Old nodes leave effectiveGasPrice out of receipts: it follows from the tx and the base fee. */
function impliedGasPrice(tx: RpcTransaction, block: BlockRow): string | null {
	if (tx.maxFeePerGas != null && tx.maxPriorityFeePerGas != null && block.base_fee_per_gas != null) {
		const tip = BigInt(tx.maxPriorityFeePerGas);
		const cap = BigInt(tx.maxFeePerGas);
		const price = BigInt(block.base_fee_per_gas) + tip;
		return `0x${(price < cap ? price : cap).toString(16)}`;
	}
	return tx.gasPrice ?? null;
}

/** Decodes a receipt's logs; `origin` is the sending EOA of the transaction. */
export function decodeLogs(receipt: RpcReceipt, origin: string, block: BlockRow): LogRow[] {
	return receipt.logs.map((log) => {
		const txIndex = hexToNumber(log.transactionIndex);
		const logIndex = hexToNumber(log.logIndex);
		const topics = log.topics.map((t) => t.toLowerCase());
		return {
			id: itemId(block.number, txIndex, logIndex),
			block_number: block.number,
			block_hash: block.hash,
			block_timestamp: block.timestamp,
			transaction_index: txIndex,
			transaction_hash: log.transactionHash.toLowerCase(),
			log_index: logIndex,
			origin,
			address: log.address.toLowerCase(),
			topic_count: topics.length,
			topic0: topics[0] ?? null,
			topic1: topics[1] ?? null,
			topic2: topics[2] ?? null,
			topic3: topics[3] ?? null,
			data: log.data.toLowerCase(),
		};
	});
}
