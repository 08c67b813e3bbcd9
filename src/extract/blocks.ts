import type { RpcBlock } from "../rpc/types.js";
import { hexToDecimal, hexToDecimalOrNull, hexToNumber, hexToNumberOrNull, lower } from "../util/hex.js";
import type { BlockRow } from "./rows.js";

/** Decodes a block from `eth_getBlockByNumber` (full transactions or hashes only). */
export function decodeBlock(b: RpcBlock): BlockRow {
	return {
		number: hexToNumber(b.number),
		hash: b.hash.toLowerCase(),
		parent_hash: b.parentHash.toLowerCase(),
		timestamp: hexToNumber(b.timestamp),
		// The nonce is 8 bytes: above 2^53, so it stays an exact decimal string.
		nonce: b.nonce == null ? "0" : hexToDecimal(b.nonce),
		mix_hash: lower(b.mixHash),
		sha3_uncles: b.sha3Uncles.toLowerCase(),
		logs_bloom: b.logsBloom.toLowerCase(),
		transactions_root: b.transactionsRoot.toLowerCase(),
		state_root: b.stateRoot.toLowerCase(),
		receipts_root: b.receiptsRoot.toLowerCase(),
		miner: b.miner.toLowerCase(),
		difficulty: hexToDecimal(b.difficulty),
		total_difficulty: hexToDecimalOrNull(b.totalDifficulty),
		size: hexToNumberOrNull(b.size),
		extra_data: b.extraData.toLowerCase(),
		gas_limit: hexToNumber(b.gasLimit),
		gas_used: hexToNumber(b.gasUsed),
		base_fee_per_gas: hexToDecimalOrNull(b.baseFeePerGas),
		transaction_count: b.transactions.length,
		uncle_count: b.uncles?.length ?? 0,
		withdrawals_root: lower(b.withdrawalsRoot),
		withdrawals:
			b.withdrawals?.map((w) => ({
				index: hexToNumber(w.index),
				validator_index: hexToNumber(w.validatorIndex),
				address: w.address.toLowerCase(),
				amount: hexToDecimal(w.amount),
			})) ?? null,
		blob_gas_used: hexToNumberOrNull(b.blobGasUsed),
		excess_blob_gas: hexToNumberOrNull(b.excessBlobGas),
		parent_beacon_block_root: lower(b.parentBeaconBlockRoot),
	};
}
