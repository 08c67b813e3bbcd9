import { ConsistencyError } from "../util/errors.js";
import { hexToNumber } from "../util/hex.js";
import { type RpcClient, RpcError } from "./client.js";
import type { BlockBundle, GethTxTrace, ParityTrace, RawTraces, RpcBlock, RpcReceipt, TraceFormat } from "./types.js";

const toHex = (n: number) => `0x${n.toString(16)}`;

/** Traces are the heaviest calls by far: each goes in a POST of its own with a long timeout,
 * so it neither holds up nor overflows the batch of light calls (geth caps a batch's answer). */
const TRACE_REQUEST = { heavy: true };
/** geth's default per-transaction tracer timeout (5 s) fails heavy mainnet transactions. */
const GETH_TRACER = { tracer: "callTracer", timeout: "120s" };

/** The node answered null for a block, its receipts or traces: it does not have the block (yet),
 * as a lagging node or a load-balanced backend behind the others does. Worth asking again. */
export class BlockUnavailableError extends ConsistencyError {
	constructor(message: string) {
		super(message, { retryable: true });
		this.name = "BlockUnavailableError";
	}
}

/** `eth_chainId` as a number. */
export async function ethChainId(rpc: RpcClient): Promise<number> {
	return hexToNumber(await rpc.request<string>("eth_chainId", []));
}

/** `eth_blockNumber`: the node's head. */
export async function ethBlockNumber(rpc: RpcClient): Promise<number> {
	return hexToNumber(await rpc.request<string>("eth_blockNumber", []));
}

/**
 * The node's head, asked again a few times while it is below `atLeast`: one backend of a
 * load-balanced pool can lag the others by a few blocks, and a block the user saw as the head a
 * moment ago should not be refused as "past the head" because of it. Returns the highest answer.
 */
export async function ethBlockNumberAtLeast(rpc: RpcClient, atLeast: number, tries = 5): Promise<number> {
	let head = await ethBlockNumber(rpc);
	for (let i = 1; i < tries && head < atLeast; i++) {
		await new Promise((r) => setTimeout(r, 100 * i));
		head = Math.max(head, await ethBlockNumber(rpc));
	}
	return head;
}

/** `eth_getBlockByNumber` with full transactions; a block the node does not have yet is retryable. */
export async function ethGetBlockByNumber(rpc: RpcClient, n: number): Promise<RpcBlock> {
	const block = await rpc.request<RpcBlock | null>("eth_getBlockByNumber", [toHex(n), true]);
	if (block == null) throw new BlockUnavailableError(`the node has no block ${n} (yet)`);
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
			if (receipts == null) throw new BlockUnavailableError(`no receipts for block ${Number(block.number)} (yet)`);
			return receipts;
		} catch (err) {
			if (!(err instanceof RpcError && err.code === "RPC_METHOD_NOT_FOUND")) throw err;
			caps.blockReceipts = false;
		}
	}
	return Promise.all(
		block.transactions.map(async (tx) => {
			const r = await rpc.request<RpcReceipt | null>("eth_getTransactionReceipt", [tx.hash]);
			if (r == null) throw new BlockUnavailableError(`no receipt for ${tx.hash} (yet)`);
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
		if (data == null) throw new BlockUnavailableError(`no traces for block ${n} (yet)`);
		return { format, data };
	}
	const data = await rpc.request<GethTxTrace[] | null>(
		"debug_traceBlockByNumber",
		[toHex(n), GETH_TRACER],
		TRACE_REQUEST,
	);
	if (data == null) throw new BlockUnavailableError(`no traces for block ${n} (yet)`);
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

/**
 * Whether block `n` is still `hash` on the node. One disagreeing answer is not taken for a
 * reorg: behind a load balancer, a backend that lags answers null and one briefly on another
 * fork answers another hash, while a real reorg answers the new hash every time. So a
 * disagreement is asked again, up to `tries` answers in all: "same" if any answer is `hash`,
 * "missing" if the node lacked the block in the last answer (it is behind us), else "different".
 */
export async function compareBlockHash(
	rpc: RpcClient,
	n: number,
	hash: string,
	tries = 3,
): Promise<"same" | "different" | "missing"> {
	const answers: (string | null)[] = [];
	for (let i = 0; i < tries; i++) {
		const answer = await ethGetBlockHash(rpc, n);
		if (answer === hash.toLowerCase()) {
			// The node came round: the answers before were faults, not a reorg.
			for (const a of answers) rpc.reportFault(a == null ? "missing_block" : "inconsistent", hashFault(n, a, hash));
			return "same";
		}
		answers.push(answer);
	}
	if (answers.at(-1) != null) return "different";
	rpc.reportFault("missing_block", `the node does not have block ${n} (stored as ${hash}): it is behind`);
	return "missing";
}

const hashFault = (n: number, answer: string | null, expected: string) =>
	`block ${n} answered as ${answer ?? "missing"}, then as ${expected}`;
