import { keccak256 } from "viem";
import type { ContractCreationRow, SelfDestructRow, TraceRow } from "./rows.js";

type TxTrace = TraceRow & { transaction_index: number; transaction_hash: string; origin: string };

function inTransaction(t: TraceRow): t is TxTrace {
	return t.transaction_index != null && t.transaction_hash != null && t.origin != null;
}

/** The fields a creation or self-destruct row takes over from its frame. */
function frameContext(t: TxTrace) {
	return {
		id: t.id,
		block_number: t.block_number,
		block_hash: t.block_hash,
		block_timestamp: t.block_timestamp,
		transaction_index: t.transaction_index,
		transaction_hash: t.transaction_hash,
		origin: t.origin,
		trace_index: t.trace_index,
		trace_address: t.trace_address,
	};
}

/**
 * Contract creations from CREATE/CREATE2 frames, top-level deploys included. A creation that
 * failed, or sits below a frame that reverted, created nothing and is left out.
 */
export function deriveContractCreations(traces: TraceRow[]): ContractCreationRow[] {
	return traces
		.filter(
			(t): t is TxTrace => t.trace_type === "create" && t.status === 1 && t.to_address != null && inTransaction(t),
		)
		.map((t) => ({
			...frameContext(t),
			contract_address: t.to_address as string,
			caller: t.from_address ?? t.origin,
			value: t.value ?? "0",
			// A top-level deploy is always CREATE; inside a transaction only the node can say.
			op_code:
				t.call_type === "create2"
					? "CREATE2"
					: t.call_type === "create" || t.trace_address.length === 0
						? "CREATE"
						: null,
			init_code_hash: t.input == null ? null : keccak256(t.input as `0x${string}`),
			bytecode: t.output,
			gas_used: t.gas_used,
		}));
}

/**
 * Self-destructs: the destroyed contract, who called it (the parent frame's caller), the
 * beneficiary and the balance sent. Reverted ones are left out.
 */
export function deriveSelfDestructs(traces: TraceRow[]): SelfDestructRow[] {
	const byPath = new Map(traces.map((t) => [`${t.transaction_hash}:${t.trace_address.join(",")}`, t]));
	return traces
		.filter((t): t is TxTrace => t.trace_type === "suicide" && t.status === 1 && inTransaction(t))
		.map((t) => {
			const parent = byPath.get(`${t.transaction_hash}:${t.trace_address.slice(0, -1).join(",")}`);
			return {
				...frameContext(t),
				// Old geth leaves SELFDESTRUCT frames empty: the parent call's target is the contract.
				contract_address: t.from_address ?? parent?.to_address ?? null,
				caller: parent?.from_address ?? null,
				beneficiary: t.to_address,
				value: t.value,
			};
		});
}
