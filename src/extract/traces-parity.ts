import type { ParityTrace } from "../rpc/types.js";
import { hexToDecimalOrNull, hexToNumberOrNull, lower } from "../util/hex.js";
import type { Frame } from "./trace-frame.js";

/** Decodes `trace_block` frames; they come in pre-order per transaction, rewards last. */
export function decodeParityTraces(traces: ParityTrace[]): Frame[] {
	return traces.map((t) => {
		const a = t.action;
		const base = {
			transaction_hash: lower(t.transactionHash),
			trace_address: t.traceAddress,
			subtraces: t.subtraces,
			reward_type: null,
			error: t.error ?? null,
		};
		switch (t.type) {
			case "create":
				return {
					...base,
					trace_type: "create",
					call_type: a.creationMethod?.toLowerCase() ?? null,
					from_address: lower(a.from),
					to_address: lower(t.result?.address),
					value: hexToDecimalOrNull(a.value),
					input: lower(a.init),
					output: lower(t.result?.code),
					gas: hexToNumberOrNull(a.gas),
					gas_used: hexToNumberOrNull(t.result?.gasUsed),
				};
			case "suicide":
				return {
					...base,
					trace_type: "suicide",
					call_type: null,
					from_address: lower(a.address),
					to_address: lower(a.refundAddress),
					value: hexToDecimalOrNull(a.balance),
					input: null,
					output: null,
					gas: null,
					gas_used: null,
				};
			case "reward":
				return {
					...base,
					trace_type: "reward",
					call_type: null,
					reward_type: a.rewardType ?? null,
					from_address: null,
					to_address: lower(a.author),
					value: hexToDecimalOrNull(a.value),
					input: null,
					output: null,
					gas: null,
					gas_used: null,
				};
			default:
				return {
					...base,
					trace_type: "call",
					call_type: a.callType?.toLowerCase() ?? null,
					from_address: lower(a.from),
					to_address: lower(a.to),
					value: hexToDecimalOrNull(a.value),
					input: lower(a.input),
					output: lower(t.result?.output),
					gas: hexToNumberOrNull(a.gas),
					gas_used: hexToNumberOrNull(t.result?.gasUsed),
				};
		}
	});
}
