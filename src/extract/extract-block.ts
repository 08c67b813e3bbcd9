import type { BlockBundle, RawTraces, RpcBlock, RpcReceipt } from "../rpc/types.js";
import { ConsistencyError } from "../util/errors.js";
import { decodeBlock } from "./blocks.js";
import { deriveContractCreations, deriveSelfDestructs } from "./contracts.js";
import { deriveNativeTransfers } from "./native-transfers.js";
import type { DatasetRows, TraceRow } from "./rows.js";
import { decodeTokenTransfers } from "./token-transfers.js";
import { placeFrames } from "./trace-frame.js";
import { decodeGethTraces } from "./traces-geth.js";
import { decodeParityTraces } from "./traces-parity.js";
import { decodeLogs, decodeTransaction } from "./transactions.js";

/**
 * Turns one block's RPC responses into rows of every dataset, after checking that they
 * describe the same block. Trace-only datasets come back empty when `traces` is null; the
 * writer records them as unavailable for the range rather than storing empty files.
 */
export function extractBlock(bundle: BlockBundle): DatasetRows {
	checkBundle(bundle);
	const block = decodeBlock(bundle.block);
	const txs = bundle.block.transactions.map((tx, i) => decodeTransaction(tx, bundle.receipts[i] as RpcReceipt, block));
	const logs = bundle.receipts.flatMap((r, i) => decodeLogs(r, txs[i]?.from_address as string, block));
	const txsByHash = new Map(txs.map((tx) => [tx.transaction_hash, tx]));
	const traces = bundle.traces ? placeFrames(decodeTraces(bundle.traces, bundle.block), block, txsByHash) : null;
	const transfers = [...deriveNativeTransfers(txs, traces), ...decodeTokenTransfers(logs)];
	transfers.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
	return {
		blocks: [block],
		transactions: txs,
		logs,
		traces: traces ?? [],
		transfers,
		contract_creations: traces ? deriveContractCreations(traces) : [],
		self_destructs: traces ? deriveSelfDestructs(traces) : [],
	};
}

function decodeTraces(raw: RawTraces, block: RpcBlock): ReturnType<typeof decodeParityTraces> {
	if (raw.format === "parity") return decodeParityTraces(raw.data);
	return decodeGethTraces(
		raw.data.map((entry, i) => {
			if (!entry.result) {
				throw new ConsistencyError(
					`block ${block.number}: geth trace of tx ${i} failed: ${entry.error ?? "no result"}`,
					{
						retryable: true,
					},
				);
			}
			return { txHash: block.transactions[i]?.hash as string, frame: entry.result };
		}),
	);
}

function checkBundle({ block, receipts, traces }: BlockBundle): void {
	const where = `block ${Number(block.number)} (${block.hash})`;
	const fail = (what: string) => {
		throw new ConsistencyError(`${where}: ${what}`, { retryable: true });
	};
	if (receipts.length !== block.transactions.length) {
		fail(`${receipts.length} receipts for ${block.transactions.length} transactions`);
	}
	block.transactions.forEach((tx, i) => {
		const r = receipts[i] as RpcReceipt;
		if (tx.blockHash.toLowerCase() !== block.hash.toLowerCase())
			fail(`transaction ${tx.hash} names block ${tx.blockHash}`);
		if (r.transactionHash.toLowerCase() !== tx.hash.toLowerCase()) {
			fail(`receipt ${i} is for ${r.transactionHash}, expected ${tx.hash}`);
		}
		if (r.blockHash.toLowerCase() !== block.hash.toLowerCase())
			fail(`receipt of ${tx.hash} names block ${r.blockHash}`);
		for (const log of r.logs) {
			if (log.blockHash.toLowerCase() !== block.hash.toLowerCase())
				fail(`a log of ${tx.hash} names block ${log.blockHash}`);
			if (log.transactionHash.toLowerCase() !== tx.hash.toLowerCase())
				fail(`receipt of ${tx.hash} holds a log of ${log.transactionHash}`);
		}
	});
	if (traces?.format === "parity") {
		const hashes = new Set(block.transactions.map((tx) => tx.hash.toLowerCase()));
		for (const t of traces.data) {
			if (t.blockHash.toLowerCase() !== block.hash.toLowerCase()) fail(`a trace names block ${t.blockHash}`);
			if (t.transactionHash != null && !hashes.has(t.transactionHash.toLowerCase())) {
				fail(`a trace names transaction ${t.transactionHash}, not in the block`);
			}
		}
	}
	if (traces?.format === "geth") {
		if (traces.data.length !== block.transactions.length) {
			fail(`${traces.data.length} geth traces for ${block.transactions.length} transactions`);
		}
		traces.data.forEach((t, i) => {
			const hash = block.transactions[i]?.hash.toLowerCase();
			if (t.txHash != null && t.txHash.toLowerCase() !== hash)
				fail(`geth trace ${i} is for ${t.txHash}, expected ${hash}`);
		});
	}
}

export type { TraceRow };
