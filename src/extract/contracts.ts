import { keccak_256 } from "@noble/hashes/sha3";
import type { ContractCreationRow, SelfDestructRow, TraceRow } from "./rows.js";

/**
 * keccak256 of 0x hex, as 0x hex: what viem's keccak256 computes (with the same hash library),
 * without loading viem, whose ~400 modules were a third of every backfill and follow start-up.
 */
function keccak256(hex: string): string {
	const digits = hex.slice(2);
	return `0x${Buffer.from(keccak_256(Buffer.from(digits.length % 2 ? `0${digits}` : digits, "hex"))).toString("hex")}`;
}

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
			init_code_hash: t.input == null ? null : keccak256(t.input),
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
