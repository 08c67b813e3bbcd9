import { JsonRpcCallError, TransportError } from "./http-batch.js";

/*
 * Sorts a failed RPC request by what a retry could change: the codes and messages nodes use for
 * "slow down", transient trouble, "batch too large" and "no such method", and the HTTP statuses.
 * The client (client.ts) retries, backs off or gives up by the kind.
 */

/** The longest backoff between attempts, and the longest Retry-After honoured. */
export const MAX_DELAY_MS = 10_000;
/** JSON-RPC codes and messages nodes use for "slow down"... */
const RATE_LIMIT_RPC_CODES = new Set([-32005, 429]);
const RATE_LIMIT_RPC_MESSAGE = /limit exceeded|rate limit|rate-limit|request limit|too many/i;
/** ...and for transient trouble: an internal error, a lagging backend ("header not found"), a busy node. */
const TRANSIENT_RPC_CODES = new Set([-32007, -32603, -1]);
const TRANSIENT_RPC_MESSAGE = /timeout|timed out|busy|try again|header not found|unavailable/i;
/** "Response too large" (geth's batch answer cap) and "batch too large": retried in smaller batches. */
const BATCH_TOO_LARGE_CODES = new Set([-32003, -32600]);
/** JSON-RPC codes for "this node does not have the method": never retried, the caller falls back. */
const METHOD_NOT_FOUND_CODES = new Set([-32601, -32004]);

export interface ErrorKind {
	name:
		| "method_not_found"
		| "rpc_error"
		| "node_error"
		| "rate_limited"
		| "batch_too_large"
		| "http_error"
		| "timeout"
		| "network"
		| "bad_response";
	retryable: boolean;
	retryAfterMs?: number;
}

/** Sorts a failed request by what a retry could change. */
export function classify(err: unknown): ErrorKind {
	if (err instanceof JsonRpcCallError) {
		if (
			METHOD_NOT_FOUND_CODES.has(err.code) ||
			/method .*(not found|not supported|does not exist)/i.test(err.message)
		) {
			return { name: "method_not_found", retryable: false };
		}
		if (
			BATCH_TOO_LARGE_CODES.has(err.code) ||
			/too large|too many requests in batch|batch (size|limit)/i.test(err.message)
		) {
			return { name: "batch_too_large", retryable: true };
		}
		if (RATE_LIMIT_RPC_CODES.has(err.code) || RATE_LIMIT_RPC_MESSAGE.test(err.message)) {
			return { name: "rate_limited", retryable: true };
		}
		if (TRANSIENT_RPC_CODES.has(err.code) || TRANSIENT_RPC_MESSAGE.test(err.message)) {
			return { name: "node_error", retryable: true };
		}
		return { name: "rpc_error", retryable: false };
	}
	if (err instanceof TransportError) {
		if (err.kind !== "http_status") return { name: err.kind, retryable: true };
		const status = err.status ?? 0;
		const retryAfterMs = err.retryAfterMs === undefined ? undefined : Math.min(MAX_DELAY_MS, err.retryAfterMs);
		if (status === 429) return { name: "rate_limited", retryable: true, retryAfterMs };
		return { name: "http_error", retryable: status === 408 || status >= 500, retryAfterMs };
	}
	return { name: "bad_response", retryable: true };
}

export function rpcCode(err: unknown): number | null {
	return err instanceof JsonRpcCallError ? err.code : null;
}

export function shortMessage(err: unknown): string {
	if (err instanceof JsonRpcCallError) return `${err.message} (code ${err.code})`;
	return err instanceof Error ? err.message : String(err);
}
