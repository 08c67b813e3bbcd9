import type { Row } from "../../query/store/store.js";
import { columnsOf } from "./list-columns.js";

/**
 * Rows to the record shapes of api-contract.md §6. Amounts stay decimal strings; block
 * integers that can pass 2^53 (nonce, difficulty, total difficulty) become bigint, which the
 * app's serializer writes as exact JSON integers.
 */
const n = (v: unknown) => (v == null ? null : Number(v));
const big = (v: unknown) => (v == null ? null : BigInt(v as string | bigint));

/**
 * The fields every event-like record starts with. The record shapes below add theirs with
 * Object.assign: an object literal that opens with a spread of a fresh object (`{ ...common(r),
 * contract }`) took V8's slow path, 2.3 µs an item against 0.1 (node 20; a 100-item page 0.72 ms
 * against 0.07; BENCHMARKS.md "sixth figures").
 */
function common(r: Row) {
	return {
		id: r.id as string,
		tx_hash: r.transaction_hash as string,
		block_hash: r.block_hash as string,
		block_number: Number(r.block_number),
		timestamp: Number(r.block_timestamp),
		origin: r.origin as string,
	};
}

export function blockRecord(r: Row, ghost = false) {
	return {
		hash: r.hash as string,
		parent_hash: r.parent_hash as string,
		number: Number(r.number),
		timestamp: Number(r.timestamp),
		header: {
			nonce: big(r.nonce),
			gas_used: Number(r.gas_used),
			mix_hash: (r.mix_hash as string | null) ?? null,
			gas_limit: Number(r.gas_limit),
			difficulty: big(r.difficulty),
			extra_data: r.extra_data as string,
			logs_bloom: r.logs_bloom as string,
			state_root: r.state_root as string,
			sha3_uncles: r.sha3_uncles as string,
			receipts_root: r.receipts_root as string,
			total_difficulty: big(r.total_difficulty),
			transactions_root: r.transactions_root as string,
		},
		ghost,
		miner: r.miner as string,
		base_fee_per_gas: (r.base_fee_per_gas as string | null) ?? null,
		size: n(r.size),
		transaction_count: Number(r.transaction_count),
	};
}

export function logRecord(r: Row) {
	return Object.assign(common(r), {
		contract: r.address as string,
		op_code: `LOG${Number(r.topic_count)}`,
		topic_0: (r.topic0 as string | null) ?? null,
		topic_1: (r.topic1 as string | null) ?? null,
		topic_2: (r.topic2 as string | null) ?? null,
		topic_3: (r.topic3 as string | null) ?? null,
		log_data: r.data as string,
		log_index: Number(r.log_index),
	});
}

export function transactionRecord(r: Row, logs?: Row[]) {
	const gasUsed = Number(r.gas_used);
	const cumulative = Number(r.cumulative_gas_used);
	const record = {
		id: r.id as string,
		hash: r.transaction_hash as string,
		block_hash: r.block_hash as string,
		block_number: Number(r.block_number),
		block_timestamp: Number(r.block_timestamp),
		index: Number(r.transaction_index),
		gas_range: [cumulative - gasUsed, cumulative],
		data: {
			origin: r.from_address as string,
			to: (r.to_address as string | null) ?? null,
			value: r.value as string,
			input: r.input as string,
			nonce: Number(r.nonce),
			status: r.status == null ? null : Number(r.status) === 1,
			tx_type: Number(r.transaction_type),
			fee: (r.fee as string | null) ?? null,
			gas_used: gasUsed,
			gas_limit: Number(r.gas),
			gas_price: ((r.effective_gas_price ?? r.gas_price) as string | null) ?? null,
			gas_fee_cap: (r.max_fee_per_gas as string | null) ?? undefined,
			gas_tip_cap: (r.max_priority_fee_per_gas as string | null) ?? undefined,
			contract_address: (r.contract_address as string | null) ?? undefined,
			sig_r: (r.r as string | null) ?? null,
			sig_s: (r.s as string | null) ?? null,
			sig_v: n(r.v),
		},
	};
	return logs ? Object.assign(record, { logs: logs.map(logRecord) }) : record;
}

export function transferRecord(r: Row) {
	const batch = r.batch_values != null;
	return Object.assign(common(r), {
		contract: (r.contract as string | null) ?? null,
		sender: r.sender as string,
		recipient: r.recipient as string,
		value: batch ? (r.batch_values as string[]) : ((r.value as string | null) ?? null),
		token_id: batch ? (r.batch_token_ids as string[]) : ((r.token_id as string | null) ?? null),
		asset_type: r.asset_type as string,
		token_standard: r.token_standard as string,
	});
}

export function creationRecord(r: Row) {
	return Object.assign(common(r), {
		contract: r.contract_address as string,
		caller: r.caller as string,
		value: r.value as string,
		op_code: (r.op_code as string | null) ?? null,
		data: {
			init_code_hash: (r.init_code_hash as string | null) ?? null,
			trace_address: (r.trace_address as number[]) ?? [],
			gas_used: n(r.gas_used),
		},
	});
}

export function selfDestructRecord(r: Row) {
	return Object.assign(common(r), {
		contract: (r.contract_address as string | null) ?? null,
		caller: (r.caller as string | null) ?? null,
		value: (r.value as string | null) ?? null,
		op_code: "SELFDESTRUCT",
		data: { beneficiary: (r.beneficiary as string | null) ?? null, trace_address: (r.trace_address as number[]) ?? [] },
	});
}

/** The opcode that made a frame: CALL, STATICCALL, DELEGATECALL, CALLCODE, CREATE, CREATE2, SELFDESTRUCT. */
function frameOpCode(r: Row): string {
	if (r.trace_type === "suicide") return "SELFDESTRUCT";
	const type = r.call_type as string | null;
	if (type) return type.toUpperCase();
	return r.trace_type === "create" ? "CREATE" : "CALL";
}

/** The 4-byte selector a call's data starts with; null for shorter data (a plain value send). */
const selectorOf = (input: unknown) => (typeof input === "string" && input.length >= 10 ? input.slice(0, 10) : null);

export function callRecord(r: Row) {
	const input = (r.input as string | null) ?? null;
	return Object.assign(common(r), {
		contract: (r.to_address as string | null) ?? null,
		from: (r.from_address as string | null) ?? null,
		to: (r.to_address as string | null) ?? null,
		// The official clients' names for the opcode, the caller, the selector, the call data and
		// the return data (their TsunamiInternalTransaction / TsunamiCall; the ABI decoding reads
		// sig_hash and input_data).
		op_code: frameOpCode(r),
		sender: (r.from_address as string | null) ?? null,
		sig_hash: selectorOf(input),
		value: (r.value as string | null) ?? null,
		input,
		input_data: input,
		output: (r.output as string | null) ?? null,
		output_data: (r.output as string | null) ?? null,
		trace_type: r.trace_type as string,
		call_type: (r.call_type as string | null) ?? null,
		trace_address: (r.trace_address as number[]) ?? [],
		gas: n(r.gas),
		gas_used: n(r.gas_used),
		error: (r.error as string | null) ?? null,
		status: Number(r.status) === 1,
	});
}

/**
 * The address whose code a frame ran as, which is the address its logs carry: the callee, except
 * for DELEGATECALL and CALLCODE, which run the callee's code as the caller.
 */
export function contextOf(r: Row): string | null {
	const type = r.call_type as string | null;
	const own = type === "delegatecall" || type === "callcode" ? r.from_address : r.to_address;
	return (own as string | null) ?? null;
}

/** A log as an item of a call's `events` (the official clients' TsunamiLogBelongingToInternalTransaction). */
export function callEventRecord(r: Row) {
	const { id, contract, op_code, topic_0, topic_1, topic_2, topic_3, log_data, log_index } = logRecord(r);
	return { id, contract, op_code, topic_0, topic_1, topic_2, topic_3, log_data, log_index };
}

/**
 * A call frame as an item of a transaction's internals (`/txs/{hash}/logs`): the fields of the
 * official clients' TsunamiTransactionLog for a call, beside the logs' fields.
 */
export function internalCallRecord(r: Row) {
	const input = (r.input as string | null) ?? null;
	return {
		id: r.id as string,
		// The contract called or created; for a self-destruct, the destroyed one (its frame's from).
		contract: ((r.trace_type === "suicide" ? r.from_address : r.to_address) as string | null) ?? null,
		op_code: frameOpCode(r),
		sender: (r.from_address as string | null) ?? null,
		origin: r.origin as string,
		sig_hash: selectorOf(input),
		value: (r.value as string | null) ?? null,
		input_data: input,
		output_data: (r.output as string | null) ?? null,
		trace_address: (r.trace_address as number[]) ?? [],
		status: Number(r.status) === 1,
		error: (r.error as string | null) ?? null,
	};
}

/**
 * JSON with bigint written as exact integers (JSON.stringify refuses bigint). Most answers hold no
 * bigint (only a block's nonce and difficulties are): plain JSON.stringify first, which throws at
 * the first bigint it meets; a replacer function made every page's text take twice as long (a
 * 100-transfer page 0.19 ms against 0.10).
 */
export function stringifyExact(value: unknown): string {
	try {
		return JSON.stringify(value);
	} catch (err) {
		if (!(err instanceof TypeError)) throw err;
	}
	const marked = JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `\u0000big:${v}` : v));
	return marked.replace(/"\\u0000big:(-?\d+)"/g, "$1");
}

/** Each record shape's columns in CSV and Arrow answers (api/answers/list-columns.ts). */
export const BLOCK_COLUMNS = columnsOf(blockRecord({}));
export const LOG_COLUMNS = columnsOf(logRecord({}));
export const TRANSACTION_COLUMNS = columnsOf(transactionRecord({}));
export const TRANSACTION_WITH_LOGS_COLUMNS = columnsOf(transactionRecord({}, []));
export const TRANSFER_COLUMNS = columnsOf(transferRecord({}));
export const CREATION_COLUMNS = columnsOf(creationRecord({}));
export const SELF_DESTRUCT_COLUMNS = columnsOf(selfDestructRecord({}));
export const CALL_COLUMNS = columnsOf(callRecord({}));
