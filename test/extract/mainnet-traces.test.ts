/**
 * Traces decoded from real mainnet `trace_block` (Parity) and `debug_traceBlockByNumber`
 * (geth callTracer) responses, compared with ethereum-etl's exports of the same blocks; then
 * the datasets derived from traces (contract creations, self-destructs, native transfers).
 *
 * Differences between chainlake and etl that are intended:
 * - geth create frames: chainlake puts the creation opcode in call_type ('create'/'create2'),
 *   etl leaves call_type empty (the Parity format has no opcode there either: null in both);
 * - trace_index: etl numbers frames block-wide; chainlake per transaction (rewards apart), see
 *   TraceRow.trace_index. Not compared.
 * Differences between the two node formats for the same block (not decoder issues):
 * - old geth reports a SELFDESTRUCT frame with no fields at all;
 * - for CALLCODE, Parity's `to` is the calling contract (where the code runs), geth's the code's address;
 * - a failed frame: Parity gives no result (gas_used null), geth gasUsed 0; errors are worded differently.
 */
import { keccak256 } from "viem";
import { describe, expect, it } from "vitest";
import { decodeBlock } from "../../src/extract/blocks.js";
import { deriveContractCreations, deriveSelfDestructs } from "../../src/extract/contracts.js";
import { deriveNativeTransfers } from "../../src/extract/native-transfers.js";
import type { BlockRow, TraceRow, TransactionRow } from "../../src/extract/rows.js";
import { type Frame, placeFrames } from "../../src/extract/trace-frame.js";
import { decodeGethTraces } from "../../src/extract/traces-geth.js";
import { decodeParityTraces } from "../../src/extract/traces-parity.js";
import type { GethTxTrace, ParityTrace, RpcBlock } from "../../src/rpc/types.js";
import { dec, type JsonRecord, loadCsv, loadJsonLines, loadRpc } from "../fixtures/mainnet.js";

// --- minimal stand-ins -------------------------------------------------------------------------

/**
 * Minimal stand-ins for the block and its transactions. The fixture has no block for the trace
 * cases' numbers (or only its hashes), and placeFrames needs a BlockRow and the transactions by
 * hash to set transaction_index, origin and status. They carry what the trace file says (block
 * hash and number, transactionHash at transactionPosition, the sender as the top frame's `from`)
 * and neutral values elsewhere; `status` is null, as in pre-Byzantium receipts.
 */
function standInBlock(number: number, hash: string, timestamp = 0): BlockRow {
	return {
		number,
		hash,
		parent_hash: `0x${"00".repeat(32)}`,
		timestamp,
		nonce: "0",
		mix_hash: null,
		sha3_uncles: `0x${"00".repeat(32)}`,
		logs_bloom: `0x${"00".repeat(256)}`,
		transactions_root: `0x${"00".repeat(32)}`,
		state_root: `0x${"00".repeat(32)}`,
		receipts_root: `0x${"00".repeat(32)}`,
		miner: `0x${"00".repeat(20)}`,
		difficulty: "0",
		total_difficulty: null,
		size: null,
		extra_data: "0x",
		gas_limit: 0,
		gas_used: 0,
		base_fee_per_gas: null,
		transaction_count: 0,
		uncle_count: 0,
		withdrawals_root: null,
		withdrawals: null,
		blob_gas_used: null,
		excess_blob_gas: null,
		parent_beacon_block_root: null,
	};
}

function standInTx(block: BlockRow, hash: string, index: number, from: string): TransactionRow {
	return {
		id: `stand-in-${index}`,
		block_number: block.number,
		block_hash: block.hash,
		block_timestamp: block.timestamp,
		transaction_index: index,
		transaction_hash: hash,
		nonce: 0,
		from_address: from,
		to_address: null,
		value: "0",
		input: "0x",
		gas: 0,
		gas_price: null,
		max_fee_per_gas: null,
		max_priority_fee_per_gas: null,
		max_fee_per_blob_gas: null,
		blob_versioned_hashes: null,
		transaction_type: 0,
		tx_chain_id: null,
		r: null,
		s: null,
		v: null,
		status: null,
		root: null,
		gas_used: 0,
		cumulative_gas_used: 0,
		effective_gas_price: null,
		fee: null,
		contract_address: null,
		logs_count: 0,
		blob_gas_used: null,
		blob_gas_price: null,
	};
}

/** Transaction stand-ins from the Parity traces: hash at transactionPosition, sender = top frame's from. */
function standInTxs(traces: ParityTrace[], block: BlockRow): TransactionRow[] {
	const txs = new Map<string, TransactionRow>();
	for (const t of traces) {
		if (t.transactionHash == null || t.transactionPosition == null || t.traceAddress.length > 0) continue;
		const hash = t.transactionHash.toLowerCase();
		txs.set(hash, standInTx(block, hash, t.transactionPosition, (t.action.from ?? "").toLowerCase()));
	}
	return [...txs.values()].sort((a, b) => a.transaction_index - b.transaction_index);
}

/** Transaction hashes in block order, from the Parity traces (for geth roots, which carry none here). */
function txHashesByPosition(traces: ParityTrace[]): string[] {
	const hashes: string[] = [];
	for (const t of traces) {
		if (t.transactionHash != null && t.transactionPosition != null) {
			hashes[t.transactionPosition] = t.transactionHash.toLowerCase();
		}
	}
	return hashes;
}

function place(frames: Frame[], block: BlockRow, txs: TransactionRow[]): TraceRow[] {
	return placeFrames(frames, block, new Map(txs.map((tx) => [tx.transaction_hash, tx])));
}

// --- etl-shaped views ----------------------------------------------------------------------------

const TRACE_FIELDS = [
	"block_number",
	"transaction_hash",
	"transaction_index",
	"from_address",
	"to_address",
	"value",
	"input",
	"output",
	"trace_type",
	"call_type",
	"reward_type",
	"gas",
	"gas_used",
	"subtraces",
	"trace_address",
	"error",
	"status",
] as const;

type TraceView = Record<(typeof TRACE_FIELDS)[number], string | null>;

function ourTrace(t: TraceRow): TraceView {
	const view = Object.fromEntries(
		TRACE_FIELDS.map((f) => [f, f === "trace_address" ? t.trace_address.join(",") : dec(t[f])]),
	) as TraceView;
	return view;
}

/** etl's trace: trace_address comma-joined in CSV, an array in JSON; empty cells null. */
function etlTrace(r: JsonRecord): TraceView {
	return Object.fromEntries(
		TRACE_FIELDS.map((f) => {
			const v = r[f];
			if (f === "trace_address") return [f, Array.isArray(v) ? v.join(",") : (dec(v) ?? "")];
			return [f, dec(v)];
		}),
	) as TraceView;
}

// --- cases -----------------------------------------------------------------------------------------

interface TraceCase {
	/** Folder name under expected/test_export_traces_job and expected/test_extract_geth_traces_job. */
	name: string;
	/** rpc/trace_block_<parity>.json */
	parity: string;
	/** rpc/debug_traceBlockByNumber_<geth>_tracer_calltracer.json */
	geth: string;
	number: number;
}

const TRACE_CASES: TraceCase[] = [
	{ name: "block_with_create", parity: "0xf44f2", geth: "0xf44f2", number: 1000690 },
	{ name: "block_with_error", parity: "0xf45bf", geth: "0xf45bf", number: 1000895 },
	{ name: "block_with_subtraces", parity: "0xf4240", geth: "0xf4240", number: 1000000 },
	{ name: "block_with_suicide", parity: "0xf7105", geth: "0xf7105", number: 1011973 },
	// Genesis has no transactions; etl's geth case for it traced block 1, also empty.
	{ name: "block_without_transactions", parity: "0x0", geth: "0x1", number: 0 },
];

/** Everything decoded for one trace case. */
function loadCase(c: TraceCase) {
	const raw = loadRpc<ParityTrace[]>(`trace_block_${c.parity}`);
	const block = standInBlock(c.number, raw[0]?.blockHash.toLowerCase() ?? `0x${"00".repeat(32)}`);
	const txs = standInTxs(raw, block);
	const parity = place(decodeParityTraces(raw), block, txs);
	const hashes = txHashesByPosition(raw);
	const gethRaw = loadRpc<GethTxTrace[]>(`debug_traceBlockByNumber_${c.geth}_tracer_calltracer`);
	const geth = place(
		decodeGethTraces(
			gethRaw.map((entry, i) => {
				if (!entry.result) throw new Error(`no geth result for tx ${i}`);
				return { txHash: hashes[i] as string, frame: entry.result };
			}),
		),
		block,
		txs,
	);
	return { raw, block, txs, parity, geth };
}

describe.each(TRACE_CASES)("mainnet traces: $name (trace_block_$parity)", (c) => {
	const { raw, parity, geth, txs } = loadCase(c);
	const etlParity = loadCsv(`expected/test_export_traces_job/${c.name}/expected_traces.csv`);
	const etlGeth = loadCsv(`expected/test_extract_geth_traces_job/${c.name}/expected_traces.csv`);

	it("decodes trace_block field by field as ethereum-etl does (status via placeFrames)", () => {
		expect(parity).toHaveLength(raw.length);
		expect(parity.map(ourTrace)).toEqual(etlParity.map(etlTrace));
	});

	it("decodes the geth callTracer field by field as ethereum-etl does", () => {
		const expected = etlGeth.map((r) => {
			const e = etlTrace(r);
			// Intended difference: chainlake names the creation opcode, etl leaves call_type empty.
			if (e.trace_type === "create") {
				expect(e.call_type).toBeNull();
				e.call_type = "create";
			}
			// etl's geth rows leave transaction_hash and status empty: compared below instead.
			return { ...e, transaction_hash: null, status: null };
		});
		expect(geth.map((t) => ({ ...ourTrace(t), transaction_hash: null, status: null }))).toEqual(expected);
	});

	it("gives geth frames the transaction hash of the same position in trace_block, and etl's Parity status", () => {
		const txFrames = parity.filter((t) => t.trace_type !== "reward");
		expect(geth.map((t) => t.transaction_hash)).toEqual(txFrames.map((t) => t.transaction_hash));
		expect(geth.map((t) => t.transaction_index)).toEqual(txFrames.map((t) => t.transaction_index));
		expect(geth.map((t) => t.status)).toEqual(
			etlParity.filter((r) => r.trace_type !== "reward").map((r) => Number(r.status)),
		);
		expect(new Set(geth.map((t) => t.transaction_hash))).toEqual(new Set(txs.map((t) => t.transaction_hash)));
	});

	it("decodes geth and Parity responses of the same block alike where the formats agree", () => {
		const txFrames = parity.filter((t) => t.trace_type !== "reward");
		expect(geth).toHaveLength(txFrames.length);
		for (const [i, g] of geth.entries()) {
			const p = txFrames[i] as TraceRow;
			const where = `${p.transaction_hash} [${p.trace_address}]`;
			expect([g.trace_type, g.trace_address, g.subtraces], where).toEqual([p.trace_type, p.trace_address, p.subtraces]);
			// Old geth's SELFDESTRUCT frame carries no fields: nothing more to compare.
			if (p.trace_type === "suicide") continue;
			expect([g.from_address, g.value, g.input, g.gas], where).toEqual([p.from_address, p.value, p.input, p.gas]);
			// CALLCODE: Parity's `to` is the calling contract, geth's the code's address.
			if (p.call_type !== "callcode") expect(g.to_address, where).toBe(p.to_address);
			// A failed frame has no Parity result (gas_used null); geth reports gasUsed 0.
			if (p.error == null) expect(g.gas_used, where).toBe(p.gas_used);
			else expect([g.error != null, g.gas_used], where).toEqual([true, 0]);
			if (p.trace_type === "call") expect(g.call_type, where).toBe(p.call_type);
		}
	});
});

// --- derived datasets ------------------------------------------------------------------------------

const byName = (name: string) => loadCase(TRACE_CASES.find((c) => c.name === name) as TraceCase);

describe("contract creations", () => {
	it("block_with_create: the top-level deploy of 0xa7e3cf95..., with etl's trace output as bytecode", () => {
		const { parity, geth } = byName("block_with_create");
		const etl = loadCsv("expected/test_export_traces_job/block_with_create/expected_traces.csv").find(
			(r) => r.trace_type === "create",
		) as Record<string, string>;
		const [creation, ...rest] = deriveContractCreations(parity);
		expect(rest).toEqual([]);
		expect(creation).toMatchObject({
			contract_address: "0xa7e3cf952ea8d9438a26ee346c295f1ada328ae1",
			caller: "0xacdee28d8ca76187883831a37f551a5904cdf191",
			origin: "0xacdee28d8ca76187883831a37f551a5904cdf191",
			transaction_hash: etl.transaction_hash,
			transaction_index: 1,
			value: "0",
			op_code: "CREATE",
			trace_address: [],
			bytecode: etl.output,
			gas_used: Number(etl.gas_used),
			init_code_hash: keccak256(etl.input as `0x${string}`),
		});
		// The geth decoding of the same block derives the same creation.
		expect(deriveContractCreations(geth)).toEqual([creation]);
	});

	/** test_stream cases: blocks with only tx hashes recorded (`_false`), traces from trace_block. */
	const STREAM_CASES = [
		{ dir: "expected/test_stream/blocks_2112234_2112234", n: "0x203aea" },
		{ dir: "expected/test_stream/blocks_508110_508110", n: "0x7c0ce" },
	];

	describe.each(STREAM_CASES)("test_stream $dir (trace_block_$n)", ({ dir, n }) => {
		// The block is real (decodeBlock only counts the hash-only transactions); the
		// transactions are stand-ins built from its hash list and the traces.
		const rpcBlock = loadRpc<Omit<RpcBlock, "transactions"> & { transactions: string[] }>(
			`eth_getBlockByNumber_${n}_false`,
		);
		const block = decodeBlock(rpcBlock as unknown as RpcBlock);
		const raw = loadRpc<ParityTrace[]>(`trace_block_${n}`);
		const hashes = rpcBlock.transactions;
		const senders = new Map(standInTxs(raw, block).map((t) => [t.transaction_hash, t.from_address]));
		const txs = hashes.map((h, i) => standInTx(block, h, i, senders.get(h) as string));
		const traces = place(decodeParityTraces(raw), block, txs);

		it("decodes the traces field by field as etl's expected_traces.json", () => {
			const expected = loadJsonLines(`${dir}/expected_traces.json`);
			expect(traces.map(ourTrace)).toEqual(expected.map(etlTrace));
			expect(traces.map((t) => [t.block_hash, t.block_timestamp])).toEqual(
				expected.map((r) => [r.block_hash, r.block_timestamp]),
			);
		});

		it("derives etl's contracts: address and bytecode", () => {
			const expected = loadJsonLines(`${dir}/expected_contracts.json`);
			const ours = deriveContractCreations(traces);
			expect(
				ours.map((r) => ({
					address: r.contract_address,
					bytecode: r.bytecode,
					block_number: r.block_number,
					block_hash: r.block_hash,
					block_timestamp: r.block_timestamp,
				})),
			).toEqual(
				expected.map((r) => ({
					address: r.address,
					bytecode: r.bytecode,
					block_number: r.block_number,
					block_hash: r.block_hash,
					block_timestamp: r.block_timestamp,
				})),
			);
			expect(ours.map((r) => r.op_code)).toEqual(["CREATE"]);
		});
	});
});

describe("self-destructs", () => {
	it("block_with_suicide (Parity): contract 0x474faa..., caller and beneficiary 0x83973747..., 0.05 ETH", () => {
		const { parity } = byName("block_with_suicide");
		expect(deriveSelfDestructs(parity)).toEqual([
			expect.objectContaining({
				transaction_hash: "0x91acb43c5f141c393a189e091c190c9ffb20e4e8a502e4cc3087be9587bdbc89",
				transaction_index: 0,
				contract_address: "0x474faa5018639791952fae334e2911700ac7fe9b",
				caller: "0x83973747eec131bf9a08ac64fb1a518e891bdf4b",
				beneficiary: "0x83973747eec131bf9a08ac64fb1a518e891bdf4b",
				value: "50000000000000000",
				trace_address: [0],
			}),
		]);
	});

	it("block_with_suicide (old geth, empty SELFDESTRUCT frame): contract and caller from the parent call", () => {
		const { geth } = byName("block_with_suicide");
		expect(deriveSelfDestructs(geth)).toEqual([
			expect.objectContaining({
				contract_address: "0x474faa5018639791952fae334e2911700ac7fe9b",
				caller: "0x83973747eec131bf9a08ac64fb1a518e891bdf4b",
				beneficiary: null,
				value: null,
			}),
		]);
	});
});

describe("native transfers from traces", () => {
	const transfers = (name: string, format: "parity" | "geth" = "parity") => {
		const c = byName(name);
		return deriveNativeTransfers(c.txs, format === "parity" ? c.parity : c.geth).map((t) => ({
			tx: t.transaction_index,
			trace_index: t.trace_index,
			sender: t.sender,
			recipient: t.recipient,
			value: t.value,
		}));
	};

	it("block_with_error: the out-of-gas call moves nothing, the successful one does", () => {
		const expected = [
			{
				tx: 1,
				trace_index: 0,
				sender: "0x9288fe5be3be048b5c7a68bfd4b9a0746b7e4a00",
				recipient: "0xe05ff93a9978bbb48356accc74088f3841fc5d72",
				value: "1100000000000000000",
			},
		];
		expect(transfers("block_with_error")).toEqual(expected);
		expect(transfers("block_with_error", "geth")).toEqual(expected);
	});

	it("block_with_subtraces: the top-level 100 ETH call is a transfer, its CALLCODE frame is not", () => {
		const expected = [
			{
				tx: 0,
				trace_index: 0,
				sender: "0x39fa8c5f2793459d6622857e7d9fbb4bd91766d3",
				recipient: "0xc083e9947cf02b8ffc7d3090ae9aea72df98fd47",
				value: "100000000000000000000",
			},
			{
				tx: 1,
				trace_index: 0,
				sender: "0x32be343b94f860124dc4fee278fdcbd38c102d88",
				recipient: "0xdf190dc7190dfba737d7777a163445b7fff16133",
				value: "437194980000000000",
			},
		];
		expect(transfers("block_with_subtraces")).toEqual(expected);
		expect(transfers("block_with_subtraces", "geth")).toEqual(expected);
	});

	it("block_with_suicide: the self-destructed balance goes from the contract to the beneficiary", () => {
		expect(transfers("block_with_suicide")).toEqual([
			{
				tx: 0,
				trace_index: 1,
				sender: "0x474faa5018639791952fae334e2911700ac7fe9b",
				recipient: "0x83973747eec131bf9a08ac64fb1a518e891bdf4b",
				value: "50000000000000000",
			},
		]);
	});

	it("block_with_create: the value call is a transfer, the zero-value deploy is not; rewards never", () => {
		expect(transfers("block_with_create")).toEqual([
			{
				tx: 0,
				trace_index: 0,
				sender: "0xaf21e07e5a929d16026a7b4d88f3906a8d2e4942",
				recipient: "0x5b3c526b152b1f3d8eabe2ec27f49b904ad51cad",
				value: "64655529900000002048",
			},
		]);
	});
});
