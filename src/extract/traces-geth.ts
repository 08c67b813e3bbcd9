import type { GethCallFrame } from "../rpc/types.js";
import { hexToDecimalOrNull, hexToNumberOrNull, lower } from "../util/hex.js";
import type { Frame } from "./trace-frame.js";

/**
 * Flattens geth callTracer results (one nested tree per transaction, in block order) into
 * pre-order frames with Parity-style trace addresses, so both formats land in one dataset.
 */
export function decodeGethTraces(roots: { txHash: string; frame: GethCallFrame }[]): Frame[] {
	const out: Frame[] = [];
	const walk = (f: GethCallFrame, txHash: string, address: number[]) => {
		out.push(decodeFrame(f, txHash, address));
		f.calls?.forEach((child, i) => {
			walk(child, txHash, [...address, i]);
		});
	};
	for (const r of roots) walk(r.frame, r.txHash.toLowerCase(), []);
	return out;
}

function decodeFrame(f: GethCallFrame, txHash: string, address: number[]): Frame {
	const op = f.type.toUpperCase();
	const traceType = op === "SELFDESTRUCT" ? "suicide" : op === "CREATE" || op === "CREATE2" ? "create" : "call";
	return {
		transaction_hash: txHash,
		trace_address: address,
		subtraces: f.calls?.length ?? 0,
		trace_type: traceType,
		call_type: traceType === "suicide" ? null : op.toLowerCase(),
		reward_type: null,
		from_address: lower(f.from),
		to_address: lower(f.to),
		value: hexToDecimalOrNull(f.value),
		input: traceType === "suicide" ? null : lower(f.input),
		output: lower(f.output),
		gas: hexToNumberOrNull(f.gas),
		gas_used: hexToNumberOrNull(f.gasUsed),
		error: f.error ?? null,
	};
}
