import type { BlockBundle, RawTraces, TraceFormat } from "../extract/extract-block.js";
import { ConsistencyError } from "../util/errors.js";
import { hexToNumber } from "../util/hex.js";
import { type RpcClient, RpcError } from "./client.js";
import type { GethTxTrace, ParityTrace, RpcBlock, RpcReceipt } from "./types.js";

const toHex = (n: number) => `0x${n.toString(16)}`;

/** Traces are the heaviest calls by far: each goes in a POST of its own with a long timeout,
 * so it neither holds up nor overflows the batch of light calls (geth caps a batch's answer). */
const TRACE_REQUEST = { alone: true, timeoutMs: 180_000 };
/** geth's default per-transaction tracer timeout (5 s) fails heavy mainnet transactions. */
const GETH_TRACER = { tracer: "callTracer", timeout: "120s" };

/** `eth_chainId` as a number. */
export async function ethChainId(rpc: RpcClient): Promise<number> {
	return hexToNumber(await rpc.request<string>("eth_chainId", []));
}

/** `eth_blockNumber`: the node's head. */
export async function ethBlockNumber(rpc: RpcClient): Promise<number> {
	return hexToNumber(await rpc.request<string>("eth_blockNumber", []));
}

/** `eth_getBlockByNumber` with full transactions; a block the node does not have yet is retryable. */
export async function ethGetBlockByNumber(rpc: RpcClient, n: number): Promise<RpcBlock> {
	const block = await rpc.request<RpcBlock | null>("eth_getBlockByNumber", [toHex(n), true]);
	if (block == null) throw new ConsistencyError(`the node has no block ${n} (yet)`, { retryable: true });
	if (hexToNumber(block.number) !== n) throw new ConsistencyError(`asked for block ${n}, got ${block.number}`);
	return block;
}

/** What a node turned out to serve; learnt once, so a missing method costs one failed call. */
export interface NodeCapabilities {
	blockReceipts: boolean;
}

/**
 * The receipts of a block in transaction order: `eth_getBlockReceipts`, or one
 * `eth_getTransactionReceipt` per transaction where the node lacks it (batched).
 */
export async function getBlockReceipts(rpc: RpcClient, block: RpcBlock, caps: NodeCapabilities): Promise<RpcReceipt[]> {
	if (block.transactions.length === 0) return [];
	if (caps.blockReceipts) {
		try {
			const receipts = await rpc.request<RpcReceipt[] | null>("eth_getBlockReceipts", [block.number]);
			if (receipts == null)
				throw new ConsistencyError(`no receipts for block ${block.number} (yet)`, { retryable: true });
			return receipts;
		} catch (err) {
			if (!(err instanceof RpcError && err.code === "RPC_METHOD_NOT_FOUND")) throw err;
			caps.blockReceipts = false;
		}
	}
	return Promise.all(
		block.transactions.map(async (tx) => {
			const r = await rpc.request<RpcReceipt | null>("eth_getTransactionReceipt", [tx.hash]);
			if (r == null) throw new ConsistencyError(`no receipt for ${tx.hash} (yet)`, { retryable: true });
			return r;
		}),
	);
}

/** `trace_block` (Parity style) or `debug_traceBlockByNumber` with geth's callTracer. */
export async function getBlockTraces(rpc: RpcClient, n: number, format: TraceFormat): Promise<RawTraces> {
	// Genesis has no transactions, and geth refuses to trace it.
	if (n === 0) return { format, data: [] } as RawTraces;
	if (format === "parity") {
		const data = await rpc.request<ParityTrace[] | null>("trace_block", [toHex(n)], TRACE_REQUEST);
		if (data == null) throw new ConsistencyError(`no traces for block ${n} (yet)`, { retryable: true });
		return { format, data };
	}
	const data = await rpc.request<GethTxTrace[] | null>(
		"debug_traceBlockByNumber",
		[toHex(n), GETH_TRACER],
		TRACE_REQUEST,
	);
	if (data == null) throw new ConsistencyError(`no traces for block ${n} (yet)`, { retryable: true });
	return { format, data };
}

/** Fetches everything about block `n` in one round of (batched) requests. */
export async function fetchBlockBundle(
	rpc: RpcClient,
	n: number,
	traces: TraceFormat | null,
	caps: NodeCapabilities,
): Promise<BlockBundle> {
	const tracesP = traces ? getBlockTraces(rpc, n, traces) : Promise.resolve(null);
	// Attach a handler now so a trace failure while the block is in flight is not "unhandled".
	tracesP.catch(() => {});
	const block = await ethGetBlockByNumber(rpc, n);
	const [receipts, rawTraces] = await Promise.all([getBlockReceipts(rpc, block, caps), tracesP]);
	return { block, receipts, traces: rawTraces };
}

/** The hash of block `n` as the node sees it now (`eth_getBlockByNumber` without transactions), or null. */
export async function ethGetBlockHash(rpc: RpcClient, n: number): Promise<string | null> {
	const block = await rpc.request<{ hash: string } | null>("eth_getBlockByNumber", [toHex(n), false]);
	return block?.hash.toLowerCase() ?? null;
}
