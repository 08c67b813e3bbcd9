import { ConsistencyError, UserInputError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";
import { getBlockTraces } from "./actions.js";
import { type RpcClient, RpcError } from "./client.js";
import type { TraceFormat } from "./types.js";

/** Answers of null for the probe block tolerated before the probe fails. */
const PROBE_ATTEMPTS = 6;

export type TraceMode = "auto" | "parity" | "geth" | "off";

/**
 * Finds which trace API the node serves by tracing `probeBlock`: `trace_block` first, then
 * `debug_traceBlockByNumber` with callTracer. Returns null (traces unavailable) only in auto
 * mode, with a warning; an explicitly requested format the node lacks is an error.
 */
export async function detectTraceFormat(
	rpc: RpcClient,
	mode: TraceMode,
	probeBlock: number,
	logger: Logger,
): Promise<TraceFormat | null> {
	if (mode === "off") return null;
	const candidates: TraceFormat[] = mode === "auto" ? ["parity", "geth"] : [mode];
	const failures: string[] = [];
	for (const format of candidates) {
		try {
			await probe(rpc, Math.max(probeBlock, 1), format);
			return format;
		} catch (err) {
			// Only a refusal means "not supported": a node that is unreachable, rate-limiting or
			// timing out is not a node without traces, and must not get a range marked traceless.
			if (!(err instanceof RpcError) || err.retryable) throw err;
			failures.push(`${format === "parity" ? "trace_block" : "debug_traceBlockByNumber"}: ${err.message}`);
		}
	}
	if (mode !== "auto") {
		throw new UserInputError(
			"TRACES_UNSUPPORTED",
			`the node does not serve ${mode} traces (${failures.join("; ")}). Use --traces auto to detect, or --traces off to export without traces.`,
		);
	}
	logger.warn(
		`the node serves neither trace_block nor debug_traceBlockByNumber (${failures.join("; ")}). ` +
			"Exporting without traces: internal native transfers, traces, contract_creations and self_destructs " +
			"are marked unavailable for this range in the manifest (not written as empty).",
	);
	return null;
}

/** Traces `n`, asking again while the node answers null for it (a lagging node or backend):
 * a block the node lacks for a moment says nothing about its trace API. */
async function probe(rpc: RpcClient, n: number, format: TraceFormat): Promise<void> {
	for (let attempt = 1; ; attempt++) {
		try {
			await getBlockTraces(rpc, n, format);
			return;
		} catch (err) {
			if (!(err instanceof ConsistencyError && err.retryable) || attempt >= PROBE_ATTEMPTS) throw err;
			await new Promise((r) => setTimeout(r, 250 * attempt));
		}
	}
}
