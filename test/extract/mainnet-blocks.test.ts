/**
 * Blocks and transactions decoded from real mainnet JSON-RPC responses, compared field by
 * field with what ethereum-etl exported from the same responses (fixtures: see
 * test/fixtures/mainnet.ts and test/fixtures/ethereum-mainnet/README.md).
 *
 * Representation differences that are intended, not bugs:
 * - nonce: etl writes the 8-byte hex nonce, chainlake an exact decimal string (compared as BigInt);
 * - withdrawals before Shanghai: etl writes an empty cell / `[]`, chainlake null ("null before Shanghai").
 */
import { describe, expect, it } from "vitest";
import { decodeBlock } from "../../src/extract/blocks.js";
import type { BlockRow, TransactionRow } from "../../src/extract/rows.js";
import { decodeTransaction } from "../../src/extract/transactions.js";
import type { RpcBlock, RpcReceipt, RpcTransaction, RpcWithdrawal } from "../../src/rpc/types.js";
import {
	dec,
	hexQuantity,
	type JsonRecord,
	listRpcFixtures,
	loadCsv,
	loadJsonLines,
	loadRpc,
	str,
} from "../fixtures/mainnet.js";

const RPC_FILES = new Set(listRpcFixtures());

/** The recorded receipt of a transaction, or undefined when the fixture has none. */
function recordedReceipt(hash: string): RpcReceipt | undefined {
	const name = `eth_getTransactionReceipt_${hash}`;
	return RPC_FILES.has(name) ? loadRpc<RpcReceipt>(name) : undefined;
}

/**
 * A synthetic receipt, for transactions the fixture has no receipt for: decodeTransaction needs
 * one, but only the transaction's own fields are compared for these. It leaves
 * effectiveGasPrice out, as pre-London nodes do, so decodeTransaction derives it.
 */
function syntheticReceipt(tx: RpcTransaction): RpcReceipt {
	return {
		transactionHash: tx.hash,
		transactionIndex: tx.transactionIndex,
		blockHash: tx.blockHash,
		blockNumber: tx.blockNumber,
		cumulativeGasUsed: "0x0",
		gasUsed: "0x0",
		logs: [],
	};
}

// --- etl-shaped views: every value a decimal string (or null), so CSV and JSON compare alike ---

const BLOCK_FIELDS = [
	"number",
	"hash",
	"parent_hash",
	"nonce",
	"sha3_uncles",
	"logs_bloom",
	"transactions_root",
	"state_root",
	"receipts_root",
	"miner",
	"difficulty",
	"total_difficulty",
	"size",
	"extra_data",
	"gas_limit",
	"gas_used",
	"timestamp",
	"transaction_count",
	"base_fee_per_gas",
] as const;

function ourBlock(b: BlockRow): Record<string, string | null> {
	return Object.fromEntries(BLOCK_FIELDS.map((f) => [f, dec(b[f])]));
}

function etlBlock(r: JsonRecord): Record<string, string | null> {
	// etl writes the nonce as 8-byte hex; chainlake as a decimal string: compare the numbers.
	return Object.fromEntries(
		BLOCK_FIELDS.map((f) => [f, f === "nonce" ? BigInt(str(r, "nonce")).toString() : dec(r[f])]),
	);
}

const TX_FIELDS = [
	"hash",
	"nonce",
	"block_hash",
	"block_number",
	"transaction_index",
	"from_address",
	"to_address",
	"value",
	"gas",
	"gas_price",
	"input",
	"block_timestamp",
	"max_fee_per_gas",
	"max_priority_fee_per_gas",
	"transaction_type",
] as const;

function ourTx(t: TransactionRow): Record<string, string | null> {
	return Object.fromEntries(TX_FIELDS.map((f) => [f, dec(f === "hash" ? t.transaction_hash : t[f])]));
}

function etlTx(r: JsonRecord): Record<string, string | null> {
	return Object.fromEntries(TX_FIELDS.map((f) => [f, dec(r[f])]));
}

const RECEIPT_FIELDS = [
	"cumulative_gas_used",
	"gas_used",
	"contract_address",
	"root",
	"status",
	"effective_gas_price",
] as const;

function ourReceipt(t: TransactionRow): Record<string, string | null> {
	return Object.fromEntries(RECEIPT_FIELDS.map((f) => [f, dec(t[f])]));
}

/** etl's receipt fields: `expected_receipts.csv` columns, or `receipt_*` in test_stream transactions. */
function etlReceipt(r: JsonRecord, prefix = ""): Record<string, string | null> {
	return Object.fromEntries(RECEIPT_FIELDS.map((f) => [f, dec(r[prefix + f])]));
}

function byHash(records: JsonRecord[], key: string): Map<string, JsonRecord> {
	return new Map(records.map((r) => [str(r, key), r]));
}

// --- recorded RPC blocks ---

interface BlockCase {
	name: string;
	/** rpc/eth_getBlockByNumber_<n>_true.json files, in order. */
	rpc: string[];
	blocks: JsonRecord[];
	transactions: JsonRecord[];
	/** etl receipts keyed by transaction hash, with the field prefix they use. */
	receipts?: { records: Map<string, JsonRecord>; prefix: string };
	/** etl's withdrawals cell for these pre-Shanghai blocks: '' in CSV, [] in JSON. */
	emptyWithdrawals: unknown;
}

const ETL_BLOCKS = "expected/test_export_blocks_job";
const STREAM_1755634 = "expected/test_stream/blocks_1755634_1755635";

const BLOCK_CASES: BlockCase[] = [
	{
		// Block 483920 (0x76250): 4 legacy transactions, all with recorded receipts.
		name: "block_with_logs (0x76250)",
		rpc: ["eth_getBlockByNumber_0x76250_true"],
		blocks: loadCsv(`${ETL_BLOCKS}/block_with_logs/expected_blocks.csv`),
		transactions: loadCsv(`${ETL_BLOCKS}/block_with_logs/expected_transactions.csv`),
		receipts: {
			records: byHash(
				loadCsv("expected/test_export_receipts_job/receipts_with_logs/expected_receipts.csv"),
				"transaction_hash",
			),
			prefix: "",
		},
		emptyWithdrawals: "",
	},
	{
		// Genesis: no transactions.
		name: "block_without_transactions (0x0)",
		rpc: ["eth_getBlockByNumber_0x0_true"],
		blocks: loadCsv(`${ETL_BLOCKS}/block_without_transactions/expected_blocks.csv`),
		transactions: loadCsv(`${ETL_BLOCKS}/block_without_transactions/expected_transactions.csv`),
		emptyWithdrawals: "",
	},
	{
		// Blocks 47218-47219 (0xb872-0xb873): 2 transactions each, no receipts recorded.
		name: "blocks_with_transactions (0xb872-0xb873)",
		rpc: ["eth_getBlockByNumber_0xb872_true", "eth_getBlockByNumber_0xb873_true"],
		blocks: loadCsv(`${ETL_BLOCKS}/blocks_with_transactions/expected_blocks.csv`),
		transactions: loadCsv(`${ETL_BLOCKS}/blocks_with_transactions/expected_transactions.csv`),
		emptyWithdrawals: "",
	},
	{
		// Blocks 1755634-1755635 (0x1ac9f2-0x1ac9f3), etl's streaming output (JSON lines, receipt_* fields).
		name: "test_stream blocks_1755634_1755635 (0x1ac9f2-0x1ac9f3)",
		rpc: ["eth_getBlockByNumber_0x1ac9f2_true", "eth_getBlockByNumber_0x1ac9f3_true"],
		blocks: loadJsonLines(`${STREAM_1755634}/expected_blocks.json`),
		transactions: loadJsonLines(`${STREAM_1755634}/expected_transactions.json`),
		receipts: {
			records: byHash(loadJsonLines(`${STREAM_1755634}/expected_transactions.json`), "hash"),
			prefix: "receipt_",
		},
		emptyWithdrawals: [],
	},
];

describe.each(BLOCK_CASES)("mainnet blocks: $name", (c) => {
	const rpcBlocks = c.rpc.map((name) => loadRpc<RpcBlock>(name));
	const decoded = rpcBlocks.map((b) => decodeBlock(b));
	const etlTxs = byHash(c.transactions, "hash");

	it("decodes every block field as ethereum-etl does", () => {
		expect(decoded.map(ourBlock)).toEqual(c.blocks.map(etlBlock));
	});

	it("has no withdrawals before Shanghai (etl: empty; chainlake: null)", () => {
		for (const [i, b] of decoded.entries()) {
			expect(c.blocks[i]?.withdrawals).toEqual(c.emptyWithdrawals);
			expect(b.withdrawals).toBeNull();
			expect(dec(c.blocks[i]?.withdrawals_root)).toBeNull();
			expect(b.withdrawals_root).toBeNull();
		}
	});

	it("decodes every transaction field as ethereum-etl does", () => {
		const ours = rpcBlocks.flatMap((b, i) =>
			b.transactions.map((tx) =>
				decodeTransaction(tx, recordedReceipt(tx.hash) ?? syntheticReceipt(tx), decoded[i] as BlockRow),
			),
		);
		expect(ours).toHaveLength(c.transactions.length);
		for (const t of ours) {
			const etl = etlTxs.get(t.transaction_hash);
			expect(etl, t.transaction_hash).toBeDefined();
			expect(ourTx(t), t.transaction_hash).toEqual(etlTx(etl as JsonRecord));
		}
	});

	if (c.receipts) {
		const receipts = c.receipts;
		it("decodes the receipt fields of every recorded receipt as ethereum-etl does", () => {
			let checked = 0;
			for (const [i, b] of rpcBlocks.entries()) {
				for (const tx of b.transactions) {
					const receipt = recordedReceipt(tx.hash);
					expect(receipt, `receipt of ${tx.hash}`).toBeDefined();
					const t = decodeTransaction(tx, receipt as RpcReceipt, decoded[i] as BlockRow);
					const etl = receipts.records.get(t.transaction_hash);
					expect(etl, t.transaction_hash).toBeDefined();
					expect(ourReceipt(t), t.transaction_hash).toEqual(etlReceipt(etl as JsonRecord, receipts.prefix));
					checked++;
				}
			}
			expect(checked).toBe(receipts.records.size);
		});
	}
});

// --- post-Shanghai: expected output only ---

/**
 * expected/test_export_blocks_job/blocks_with_transactions_and_withdrawals: blocks 17173049-17173050
 * (withdrawals, 298 legacy and EIP-1559 transactions), given only as etl's output. This case
 * rebuilds RPC-shaped blocks from etl's JSON (numbers hex-encoded exactly through BigInt) and
 * checks that decodeBlock / decodeTransaction read the post-Shanghai and EIP-1559 fields back
 * exactly, large values included. It checks decoding and exactness, not fidelity to a real
 * node's response (no node produced these RPC objects).
 */
describe("mainnet blocks: blocks_with_transactions_and_withdrawals (rebuilt from etl output)", () => {
	const dir = `${ETL_BLOCKS}/blocks_with_transactions_and_withdrawals`;
	const etlBlocks = loadJsonLines(`${dir}/expected_blocks.json`);
	const etlTxs = loadJsonLines(`${dir}/expected_transactions.json`);

	const rebuildTx = (t: JsonRecord): RpcTransaction => ({
		hash: str(t, "hash"),
		blockHash: str(t, "block_hash"),
		blockNumber: hexQuantity(t.block_number),
		transactionIndex: hexQuantity(t.transaction_index),
		from: str(t, "from_address"),
		to: t.to_address === null ? null : str(t, "to_address"),
		value: hexQuantity(t.value),
		input: str(t, "input"),
		nonce: hexQuantity(t.nonce),
		gas: hexQuantity(t.gas),
		gasPrice: hexQuantity(t.gas_price),
		maxFeePerGas: t.max_fee_per_gas === null ? null : hexQuantity(t.max_fee_per_gas),
		maxPriorityFeePerGas: t.max_priority_fee_per_gas === null ? null : hexQuantity(t.max_priority_fee_per_gas),
		type: hexQuantity(t.transaction_type),
	});

	const rebuildBlock = (b: JsonRecord): RpcBlock => ({
		number: hexQuantity(b.number),
		hash: str(b, "hash"),
		parentHash: str(b, "parent_hash"),
		timestamp: hexQuantity(b.timestamp),
		nonce: str(b, "nonce"),
		sha3Uncles: str(b, "sha3_uncles"),
		logsBloom: str(b, "logs_bloom"),
		transactionsRoot: str(b, "transactions_root"),
		stateRoot: str(b, "state_root"),
		receiptsRoot: str(b, "receipts_root"),
		miner: str(b, "miner"),
		difficulty: hexQuantity(b.difficulty),
		totalDifficulty: hexQuantity(b.total_difficulty),
		size: hexQuantity(b.size),
		extraData: str(b, "extra_data"),
		gasLimit: hexQuantity(b.gas_limit),
		gasUsed: hexQuantity(b.gas_used),
		baseFeePerGas: hexQuantity(b.base_fee_per_gas),
		withdrawalsRoot: str(b, "withdrawals_root"),
		withdrawals: (b.withdrawals as JsonRecord[]).map(
			(w): RpcWithdrawal => ({
				index: hexQuantity(w.index),
				validatorIndex: hexQuantity(w.validator_index),
				address: str(w, "address"),
				amount: hexQuantity(w.amount),
			}),
		),
		transactions: etlTxs.filter((t) => dec(t.block_number) === dec(b.number)).map(rebuildTx),
	});

	const rpcBlocks = etlBlocks.map(rebuildBlock);
	const decoded = rpcBlocks.map((b) => decodeBlock(b));
	// Synthetic receipts (no effectiveGasPrice): the transaction fields are what is checked here.
	const txs = rpcBlocks.flatMap((b, i) =>
		b.transactions.map((tx) => decodeTransaction(tx, syntheticReceipt(tx), decoded[i] as BlockRow)),
	);

	it("reads etl's JSON exactly: the JSON lines agree with the CSV export digit for digit", () => {
		const csvBlocks = loadCsv(`${dir}/expected_blocks.csv`);
		const csvTxs = loadCsv(`${dir}/expected_transactions.csv`);
		expect(etlBlocks.map(etlBlock)).toEqual(csvBlocks.map(etlBlock));
		expect(etlTxs.map(etlTx)).toEqual(csvTxs.map(etlTx));
		// A value above 2^53 survives: total difficulty 58750003716598352816469.
		expect(etlBlocks[0]?.total_difficulty).toBe(58750003716598352816469n);
	});

	it("decodes every block field back to etl's values", () => {
		expect(decoded.map(ourBlock)).toEqual(etlBlocks.map(etlBlock));
		expect(decoded.map((b) => b.transaction_count)).toEqual([116, 182]);
	});

	it("decodes withdrawals (index, validator_index, address, amount in gwei) and the withdrawals root", () => {
		for (const [i, b] of decoded.entries()) {
			const etl = etlBlocks[i] as JsonRecord;
			expect(b.withdrawals_root).toBe(etl.withdrawals_root);
			expect(b.withdrawals).toEqual(
				(etl.withdrawals as JsonRecord[]).map((w) => ({
					index: Number(dec(w.index)),
					validator_index: Number(dec(w.validator_index)),
					address: w.address,
					amount: dec(w.amount),
				})),
			);
			expect(b.withdrawals).toHaveLength(16);
		}
	});

	it("decodes every transaction field back to etl's values (legacy and EIP-1559)", () => {
		expect(txs).toHaveLength(298);
		expect(txs.map(ourTx)).toEqual(etlTxs.map(etlTx));
		expect(new Set(txs.map((t) => t.transaction_type))).toEqual(new Set([0, 2]));
		// The largest value, 32 ETH, is above 2^53 wei.
		expect(txs.some((t) => t.value === "32000000000000000000")).toBe(true);
	});

	it("derives the effective gas price (min(base fee + tip, fee cap)) equal to the node's gas_price", () => {
		// Nodes report an EIP-1559 transaction's effective price as gasPrice; without a receipt
		// effectiveGasPrice, decodeTransaction derives it from the block's base fee.
		for (const t of txs) {
			expect(t.effective_gas_price, t.transaction_hash).toBe(t.gas_price);
		}
	});
});
