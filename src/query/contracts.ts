import { inList } from "./conditions.js";
import { type ListResult, listRows, type Page } from "./list.js";
import type { Params, Row, Snapshot } from "./store/store.js";
import { recordsSource } from "./wallet-indexes.js";

export const CREATION_COLUMNS =
	"id, transaction_hash, block_hash, block_number, block_timestamp, origin, contract_address, caller, value, op_code, trace_address, init_code_hash, gas_used";
export const SELF_DESTRUCT_COLUMNS =
	"id, transaction_hash, block_hash, block_number, block_timestamp, origin, contract_address, caller, beneficiary, value, trace_address";
export const CALL_COLUMNS =
	"id, transaction_hash, block_hash, block_number, block_timestamp, origin, trace_type, call_type, from_address, to_address, value, input, output, gas, gas_used, error, status, trace_address";

export interface ContractEventFilter {
	origin?: string;
	caller?: string;
	contracts?: string[];
}

function conditions(f: ContractEventFilter, callerColumn: string) {
	const where: string[] = [];
	const params: Params = {};
	if (f.origin) {
		params.origin = f.origin;
		where.push("origin = $origin");
	}
	if (f.caller) {
		params.caller = f.caller;
		where.push(`${callerColumn} = $caller`);
	}
	if (f.contracts?.length) where.push(inList("contract_address", "contract", f.contracts, params));
	return { where: where.join(" AND ") || "true", params };
}

/**
 * Contract creations, oldest first. A caller's (a factory's) come from its records
 * (`wallet_creations`, sorted by caller) where the chunks have them, else from the dataset.
 */
export function findCreations(db: Snapshot, f: ContractEventFilter, page: Page): Promise<ListResult> {
	const q = conditions(f, "caller");
	// In the records the caller is the key column: its copy in the record is not read (each
	// record's JSON of the key's rows parsed: 3 ms a page of a factory with 1,519 creations at M).
	const rest = conditions({ ...f, caller: undefined }, "caller").where;
	const indexes = f.caller ? [recordsSource("wallet_creations", ["address = $caller", rest], f.caller)] : [];
	return listRows(db, { dataset: "contract_creations", columns: CREATION_COLUMNS, ...q, indexes }, page);
}

export function findSelfDestructs(db: Snapshot, f: ContractEventFilter, page: Page): Promise<ListResult> {
	return listRows(db, { dataset: "self_destructs", columns: SELF_DESTRUCT_COLUMNS, ...conditions(f, "caller") }, page);
}

export interface CallFilter {
	from?: string;
	/** Callees: any of these. */
	to?: string[];
	origin?: string;
	callType?: string;
	/** 4-byte function selectors the call data starts with (any of them), e.g. 0xa9059cbb. */
	selectors?: string[];
}

/** Trace frames (internal calls, creates, self-destructs) by caller, callee or origin. */
export function findCalls(db: Snapshot, f: CallFilter, page: Page): Promise<ListResult> {
	const where: string[] = ["transaction_hash IS NOT NULL"];
	const params: Params = {};
	for (const [key, column] of [
		["from", "from_address"],
		["origin", "origin"],
		["callType", "call_type"],
	] as const) {
		const v = f[key];
		if (v === undefined) continue;
		params[key] = v;
		where.push(`${column} = $${key}`);
	}
	if (f.to?.length) where.push(inList("to_address", "to", f.to, params));
	if (f.selectors?.length) where.push(inList("left(input, 10)", "selector", f.selectors, params));
	return listRows(db, { dataset: "traces", columns: CALL_COLUMNS, where: where.join(" AND "), params }, page);
}

/**
 * The frames of one transaction in execution order (depth first), the reverted ones (status 0:
 * the frame or one above it failed) only when `includeFailed`. Block rewards have no
 * transaction and never match.
 */
export function callsOfTransaction(db: Snapshot, tx: Row, includeFailed: boolean): Promise<Row[]> {
	const block = Number(tx.block_number);
	return db.query(
		`SELECT ${CALL_COLUMNS} FROM {traces} WHERE block_number = $block AND transaction_hash = $hash ${includeFailed ? "" : "AND status = 1"} ORDER BY id`,
		{ block, hash: String(tx.transaction_hash) },
		// Only the files of that block.
		[block, block],
	);
}
