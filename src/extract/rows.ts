/**
 * One interface per dataset: the rows the extractors produce and the Parquet writer stores.
 * Column types and docs live in store/format/schema.ts, which the compiler keeps in step with these.
 * Conventions: addresses and hashes lowercase 0x hex; uint256 amounts exact decimal strings;
 * counts, gas and indexes numbers; absent values null.
 */

export interface Withdrawal {
	index: number;
	validator_index: number;
	address: string;
	/** Gwei, as the protocol counts withdrawals. */
	amount: string;
}

export interface BlockRow {
	number: number;
	hash: string;
	parent_hash: string;
	timestamp: number;
	nonce: string;
	mix_hash: string | null;
	sha3_uncles: string;
	logs_bloom: string;
	transactions_root: string;
	state_root: string;
	receipts_root: string;
	miner: string;
	difficulty: string;
	total_difficulty: string | null;
	size: number | null;
	extra_data: string;
	gas_limit: number;
	gas_used: number;
	base_fee_per_gas: string | null;
	transaction_count: number;
	uncle_count: number;
	withdrawals_root: string | null;
	withdrawals: Withdrawal[] | null;
	blob_gas_used: number | null;
	excess_blob_gas: number | null;
	parent_beacon_block_root: string | null;
}

/** Fields every per-transaction row repeats, so each dataset answers without a join. */
export interface TxContext {
	id: string;
	block_number: number;
	block_hash: string;
	block_timestamp: number;
	transaction_index: number | null;
	transaction_hash: string | null;
}

export interface TransactionRow extends TxContext {
	transaction_index: number;
	transaction_hash: string;
	nonce: number;
	from_address: string;
	to_address: string | null;
	value: string;
	input: string;
	gas: number;
	gas_price: string | null;
	max_fee_per_gas: string | null;
	max_priority_fee_per_gas: string | null;
	max_fee_per_blob_gas: string | null;
	blob_versioned_hashes: string[] | null;
	transaction_type: number;
	tx_chain_id: string | null;
	r: string | null;
	s: string | null;
	v: string | null;
	status: number | null;
	root: string | null;
	gas_used: number;
	cumulative_gas_used: number;
	effective_gas_price: string | null;
	fee: string | null;
	contract_address: string | null;
	logs_count: number;
	blob_gas_used: number | null;
	blob_gas_price: string | null;
}

export interface LogRow extends TxContext {
	transaction_index: number;
	transaction_hash: string;
	log_index: number;
	origin: string;
	address: string;
	topic_count: number;
	topic0: string | null;
	topic1: string | null;
	topic2: string | null;
	topic3: string | null;
	data: string;
}

export type TraceType = "call" | "create" | "suicide" | "reward";

export interface TraceRow extends TxContext {
	origin: string | null;
	/** Position of the frame in the transaction's depth-first (pre-order) walk; block rewards count apart. */
	trace_index: number;
	trace_address: number[];
	subtraces: number;
	trace_type: TraceType;
	/** call, callcode, delegatecall, staticcall; for creates the opcode when the node says (create, create2). */
	call_type: string | null;
	reward_type: string | null;
	from_address: string | null;
	to_address: string | null;
	value: string | null;
	input: string | null;
	output: string | null;
	gas: number | null;
	gas_used: number | null;
	error: string | null;
	/** 1 when this frame and every frame above it succeeded, else 0. */
	status: number;
}

export type AssetType = "native" | "ft" | "nft";
export type TokenStandard = "native" | "erc20" | "erc721" | "erc1155";

export interface TransferRow extends TxContext {
	transaction_index: number;
	transaction_hash: string;
	origin: string;
	asset_type: AssetType;
	token_standard: TokenStandard;
	contract: string | null;
	sender: string;
	recipient: string;
	value: string | null;
	token_id: string | null;
	/** ERC-1155 TransferBatch only: amounts and ids, in log order. */
	batch_values: string[] | null;
	batch_token_ids: string[] | null;
	operator: string | null;
	log_index: number | null;
	trace_index: number | null;
}

export interface ContractCreationRow extends TxContext {
	transaction_index: number;
	transaction_hash: string;
	origin: string;
	contract_address: string;
	caller: string;
	value: string;
	op_code: "CREATE" | "CREATE2" | null;
	trace_index: number;
	trace_address: number[];
	init_code_hash: string | null;
	bytecode: string | null;
	gas_used: number | null;
}

export interface SelfDestructRow extends TxContext {
	transaction_index: number;
	transaction_hash: string;
	origin: string;
	contract_address: string | null;
	caller: string | null;
	beneficiary: string | null;
	value: string | null;
	trace_index: number;
	trace_address: number[];
}

export interface DatasetRows {
	blocks: BlockRow[];
	transactions: TransactionRow[];
	logs: LogRow[];
	traces: TraceRow[];
	transfers: TransferRow[];
	contract_creations: ContractCreationRow[];
	self_destructs: SelfDestructRow[];
}

export type DatasetName = keyof DatasetRows;

export const DATASETS: readonly DatasetName[] = [
	"blocks",
	"transactions",
	"logs",
	"traces",
	"transfers",
	"contract_creations",
	"self_destructs",
];

/** Datasets that only traces can fill: absent, not empty, for ranges fetched without traces. */
export const TRACE_DATASETS: readonly DatasetName[] = ["traces", "contract_creations", "self_destructs"];
