/** The raw JSON-RPC shapes chainlake reads, as nodes send them (hex strings, optional fields). */

export interface RpcWithdrawal {
	index: string;
	validatorIndex: string;
	address: string;
	amount: string;
}

export interface RpcTransaction {
	hash: string;
	blockHash: string;
	blockNumber: string;
	transactionIndex: string;
	from: string;
	to: string | null;
	value: string;
	input: string;
	nonce: string;
	gas: string;
	gasPrice?: string | null;
	maxFeePerGas?: string | null;
	maxPriorityFeePerGas?: string | null;
	maxFeePerBlobGas?: string | null;
	blobVersionedHashes?: string[] | null;
	type?: string | null;
	chainId?: string | null;
	r?: string | null;
	s?: string | null;
	v?: string | null;
	yParity?: string | null;
}

export interface RpcBlock {
	number: string;
	hash: string;
	parentHash: string;
	timestamp: string;
	nonce?: string | null;
	mixHash?: string | null;
	sha3Uncles: string;
	logsBloom: string;
	transactionsRoot: string;
	stateRoot: string;
	receiptsRoot: string;
	miner: string;
	difficulty: string;
	totalDifficulty?: string | null;
	size?: string | null;
	extraData: string;
	gasLimit: string;
	gasUsed: string;
	baseFeePerGas?: string | null;
	uncles?: string[];
	withdrawalsRoot?: string | null;
	withdrawals?: RpcWithdrawal[] | null;
	blobGasUsed?: string | null;
	excessBlobGas?: string | null;
	parentBeaconBlockRoot?: string | null;
	transactions: RpcTransaction[];
}

export interface RpcLog {
	address: string;
	topics: string[];
	data: string;
	blockHash: string;
	blockNumber: string;
	transactionHash: string;
	transactionIndex: string;
	logIndex: string;
	removed?: boolean;
}

export interface RpcReceipt {
	transactionHash: string;
	transactionIndex: string;
	blockHash: string;
	blockNumber: string;
	from?: string;
	to?: string | null;
	cumulativeGasUsed: string;
	gasUsed: string;
	effectiveGasPrice?: string | null;
	contractAddress?: string | null;
	logs: RpcLog[];
	status?: string | null;
	root?: string | null;
	blobGasUsed?: string | null;
	blobGasPrice?: string | null;
}

/** One frame of `trace_block` (Parity/OpenEthereum/Erigon/Reth/anvil style). */
export interface ParityTrace {
	type: "call" | "create" | "suicide" | "reward" | string;
	action: {
		callType?: string;
		from?: string;
		to?: string;
		gas?: string;
		input?: string;
		init?: string;
		value?: string;
		creationMethod?: string;
		address?: string;
		balance?: string;
		refundAddress?: string;
		author?: string;
		rewardType?: string;
	};
	result?: { gasUsed?: string; output?: string; address?: string; code?: string } | null;
	error?: string;
	subtraces: number;
	traceAddress: number[];
	transactionHash: string | null;
	transactionPosition: number | null;
	blockNumber: number;
	blockHash: string;
}

/** One frame of geth's `callTracer`, nested. */
export interface GethCallFrame {
	type: string;
	from?: string;
	to?: string;
	value?: string;
	gas?: string;
	gasUsed?: string;
	input?: string;
	output?: string;
	error?: string;
	revertReason?: string;
	calls?: GethCallFrame[];
}

/** One entry of `debug_traceBlockByNumber` with the callTracer: a result per transaction, in order. */
export interface GethTxTrace {
	txHash?: string;
	result?: GethCallFrame;
	error?: string;
}

/** The trace API a node serves: Parity's trace_block, or geth's debug_traceBlockByNumber (callTracer). */
export type TraceFormat = "parity" | "geth";

export type RawTraces = { format: "parity"; data: ParityTrace[] } | { format: "geth"; data: GethTxTrace[] };

/** Everything the node said about one block. */
export interface BlockBundle {
	block: RpcBlock;
	/** In transaction order. */
	receipts: RpcReceipt[];
	traces: RawTraces | null;
}
