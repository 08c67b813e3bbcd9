import type {
	BlockRow,
	ContractCreationRow,
	DatasetName,
	DatasetRows,
	LogRow,
	SelfDestructRow,
	TraceRow,
	TransactionRow,
	TransferRow,
} from "../../extract/rows.js";

/* The datasets' columns (format/): each column's DuckDB type and meaning, and each dataset's row order. */

/** A Parquet column: its DuckDB type and what it means (data/README.md is written from these). */
export type Column = readonly [type: string, doc: string];

/** Every field of the row type, and nothing else: the compiler keeps rows and schema in step. */
type Columns<Row> = { readonly [K in keyof Required<Row>]: Column };

const U256 = "VARCHAR";
/** uint256 columns, by their Column object (u256 made each one). */
const UINT256 = new WeakSet<Column>();
/** A uint256 column: exact decimal text (DuckDB writes its 128-bit integers to Parquet as DOUBLE). */
function u256(doc: string): Column {
	const column = [U256, doc] as const;
	UINT256.add(column);
	return column;
}
const ADDR = "VARCHAR";
const HASH = "VARCHAR";
const HEX = "VARCHAR";
/**
 * Integers are signed (BIGINT, INTEGER, TINYINT): Delta Lake and Iceberg have no unsigned types,
 * and Spark reads Parquet's UINT_64 as decimal(20,0), so unsigned ones would read differently in
 * every engine. Every value fits (block numbers, gas, counts are far below 2^63), but the
 * proof-of-work nonce, a full 64-bit value: DECIMAL(20,0).
 */
export const NONCE = "DECIMAL(20,0)";

const txContext = {
	id: ["VARCHAR", "item id {block:016x}-{tx_index:04x}-{ordinal:08x}; sorts in chain order"],
	block_number: ["BIGINT", "block number"],
	block_hash: [HASH, "block hash"],
	block_timestamp: ["BIGINT", "block timestamp, unix seconds"],
	transaction_index: ["INTEGER", "position of the transaction in its block"],
	transaction_hash: [HASH, "transaction hash"],
} as const;

const blocks: Columns<BlockRow> = {
	number: ["BIGINT", "block number"],
	hash: [HASH, "block hash"],
	parent_hash: [HASH, "parent block hash"],
	timestamp: ["BIGINT", "unix seconds"],
	// 8 bytes, so it can pass BIGINT's 2^63 - 1: an exact DECIMAL(20,0), which Parquet stores as a
	// real decimal (a HUGEINT would be written as DOUBLE). Read it as `nonce::VARCHAR` for exactness.
	nonce: [NONCE, "proof-of-work nonce (0 after the merge); a full 64-bit value, hence DECIMAL(20,0)"],
	mix_hash: [HASH, "mix hash (prevRandao after the merge)"],
	sha3_uncles: [HASH, "hash of the uncles list"],
	logs_bloom: [HEX, "256-byte logs bloom, hex"],
	transactions_root: [HASH, "transactions trie root"],
	state_root: [HASH, "state trie root"],
	receipts_root: [HASH, "receipts trie root"],
	miner: [ADDR, "fee recipient"],
	difficulty: u256("difficulty, decimal string"),
	total_difficulty: u256("total difficulty, decimal string; null when the node no longer reports it"),
	size: ["BIGINT", "block size in bytes"],
	extra_data: [HEX, "extra data, hex"],
	gas_limit: ["BIGINT", "gas limit"],
	gas_used: ["BIGINT", "gas used"],
	base_fee_per_gas: u256("EIP-1559 base fee in wei, decimal string; null before London"),
	transaction_count: ["INTEGER", "number of transactions"],
	uncle_count: ["INTEGER", "number of uncles"],
	withdrawals_root: [HASH, "withdrawals root; null before Shanghai"],
	withdrawals: [
		'STRUCT("index" BIGINT, validator_index BIGINT, address VARCHAR, amount VARCHAR)[]',
		"beacon withdrawals (amount in gwei, decimal string); null before Shanghai",
	],
	blob_gas_used: ["BIGINT", "EIP-4844 blob gas used; null before Cancun"],
	excess_blob_gas: ["BIGINT", "EIP-4844 excess blob gas; null before Cancun"],
	parent_beacon_block_root: [HASH, "EIP-4788 parent beacon block root; null before Cancun"],
};

const transactions: Columns<TransactionRow> = {
	...txContext,
	nonce: ["BIGINT", "sender nonce"],
	from_address: [ADDR, "sender (the transaction's origin)"],
	to_address: [ADDR, "recipient; null for a contract deployment"],
	value: u256("wei sent, decimal string"),
	input: [HEX, "call data, hex"],
	gas: ["BIGINT", "gas limit of the transaction"],
	gas_price: u256("gas price in wei (for EIP-1559 transactions as the node reports it)"),
	max_fee_per_gas: u256("EIP-1559 fee cap in wei; null for legacy transactions"),
	max_priority_fee_per_gas: u256("EIP-1559 tip cap in wei; null for legacy transactions"),
	max_fee_per_blob_gas: u256("EIP-4844 blob fee cap in wei"),
	blob_versioned_hashes: ["VARCHAR[]", "EIP-4844 blob hashes"],
	transaction_type: ["TINYINT", "0 legacy, 1 access list, 2 EIP-1559, 3 blob, 4 set-code"],
	tx_chain_id: u256("chain id signed into the transaction; null for pre-EIP-155 transactions"),
	r: [HEX, "signature r"],
	s: [HEX, "signature s"],
	v: u256("signature v (y parity for typed transactions), decimal string"),
	status: ["TINYINT", "receipt status: 1 success, 0 failure; null before Byzantium"],
	root: [HASH, "receipt state root; only before Byzantium"],
	gas_used: ["BIGINT", "gas used by this transaction"],
	cumulative_gas_used: ["BIGINT", "gas used in the block up to and including this transaction"],
	effective_gas_price: u256("wei paid per gas"),
	fee: u256("gas_used * effective_gas_price in wei, decimal string (blob fees not included)"),
	contract_address: [ADDR, "contract created by a deployment transaction"],
	logs_count: ["INTEGER", "number of logs in the receipt"],
	blob_gas_used: ["BIGINT", "EIP-4844 blob gas used"],
	blob_gas_price: u256("EIP-4844 blob gas price in wei"),
};

const logs: Columns<LogRow> = {
	...txContext,
	id: ["VARCHAR", "item id; ordinal = log_index"],
	log_index: ["INTEGER", "position of the log in its block"],
	origin: [ADDR, "sender of the transaction"],
	address: [ADDR, "contract that emitted the log"],
	topic_count: ["TINYINT", "number of topics (LOG0..LOG4)"],
	topic0: [HASH, "first topic (event signature hash), or null"],
	topic1: [HASH, "second topic or null"],
	topic2: [HASH, "third topic or null"],
	topic3: [HASH, "fourth topic or null"],
	data: [HEX, "non-indexed data, hex"],
};

const traces: Columns<TraceRow> = {
	...txContext,
	id: ["VARCHAR", "item id; ordinal = trace_index (tx index ffff for block rewards)"],
	transaction_index: ["INTEGER", "position of the transaction; null for block rewards"],
	transaction_hash: [HASH, "transaction hash; null for block rewards"],
	origin: [ADDR, "sender of the transaction; null for block rewards"],
	trace_index: ["INTEGER", "position of the frame in the transaction's depth-first walk"],
	trace_address: ["INTEGER[]", "path of child indexes from the top-level frame ([] for it)"],
	subtraces: ["INTEGER", "number of child frames"],
	trace_type: ["VARCHAR", "call, create, suicide (self-destruct) or reward"],
	call_type: ["VARCHAR", "call, callcode, delegatecall, staticcall; create or create2 when the node names it"],
	reward_type: ["VARCHAR", "block or uncle, for reward frames"],
	from_address: [ADDR, "caller; for suicide the destroyed contract"],
	to_address: [ADDR, "callee; for create the new contract; for suicide the beneficiary"],
	value: u256("wei moved by the frame, decimal string"),
	input: [HEX, "call data or init code"],
	output: [HEX, "return data or deployed code"],
	gas: ["BIGINT", "gas given to the frame"],
	gas_used: ["BIGINT", "gas used by the frame"],
	error: ["VARCHAR", "error as the node words it; null on success"],
	status: ["TINYINT", "1 when this frame and all frames above it succeeded, else 0"],
};

const transfers: Columns<TransferRow> = {
	...txContext,
	id: ["VARCHAR", "item id; ordinal = trace_index for native, 0x80000000 + log_index for tokens"],
	origin: [ADDR, "sender of the transaction"],
	asset_type: ["VARCHAR", "native, ft (fungible) or nft (ERC-721 and ERC-1155)"],
	token_standard: ["VARCHAR", "native, erc20, erc721 or erc1155"],
	contract: [ADDR, "token contract; null for native"],
	sender: [ADDR, "address the value left"],
	recipient: [ADDR, "address the value reached"],
	value: u256("wei or token amount, decimal string; null for ERC-721 and ERC-1155 batches"),
	token_id: u256("token id, decimal string; null for native, ERC-20 and ERC-1155 batches"),
	batch_values: ["VARCHAR[]", "ERC-1155 TransferBatch amounts, decimal strings"],
	batch_token_ids: ["VARCHAR[]", "ERC-1155 TransferBatch ids, decimal strings"],
	operator: [ADDR, "ERC-1155 operator"],
	log_index: ["INTEGER", "log of a token transfer"],
	trace_index: ["INTEGER", "frame of a native transfer (0 = the transaction's own value)"],
};

const contract_creations: Columns<ContractCreationRow> = {
	...txContext,
	id: ["VARCHAR", "item id; ordinal = trace_index"],
	origin: [ADDR, "sender of the transaction"],
	contract_address: [ADDR, "the created contract"],
	caller: [ADDR, "account that executed CREATE/CREATE2 (the sender for a deployment transaction)"],
	value: u256("wei sent to the new contract, decimal string"),
	op_code: ["VARCHAR", "CREATE or CREATE2; null where the node's traces do not say"],
	trace_index: ["INTEGER", "frame of the creation"],
	trace_address: ["INTEGER[]", "path of the frame"],
	init_code_hash: [HASH, "keccak256 of the init code"],
	bytecode: [HEX, "deployed runtime code"],
	gas_used: ["BIGINT", "gas used by the creation frame"],
};

const self_destructs: Columns<SelfDestructRow> = {
	...txContext,
	id: ["VARCHAR", "item id; ordinal = trace_index"],
	origin: [ADDR, "sender of the transaction"],
	contract_address: [ADDR, "the self-destructed contract"],
	caller: [ADDR, "account that called the contract"],
	beneficiary: [ADDR, "account that received the balance"],
	value: u256("wei sent to the beneficiary, decimal string (null where the node does not say)"),
	trace_index: ["INTEGER", "frame of the self-destruct"],
	trace_address: ["INTEGER[]", "path of the frame"],
};

export const SCHEMAS: { readonly [D in DatasetName]: Columns<DatasetRows[D][number]> } = {
	blocks,
	transactions,
	logs,
	traces,
	transfers,
	contract_creations,
	self_destructs,
};

/** Rows are written in chain order: block, transaction, position in it (the id sorts so). */
export const SORT_KEY: { readonly [D in DatasetName]: string } = {
	blocks: "number",
	transactions: "id",
	logs: "id",
	traces: "id",
	transfers: "id",
	contract_creations: "id",
	self_destructs: "id",
};

/** The uint256 columns of `dataset` (decimal text), which the SQL views add numeric forms of (query/views.ts). */
export const uint256Columns = (dataset: DatasetName): string[] =>
	Object.entries(SCHEMAS[dataset] as Record<string, Column>)
		.filter(([, c]) => UINT256.has(c))
		.map(([name]) => name);
