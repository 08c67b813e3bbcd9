import { ChainlakeError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";
import { createHttpBatchTransport, JsonRpcCallError, TransportError } from "./http-batch.js";

/** Attempts per request across all endpoints before giving up (a node restart takes seconds). */
const MAX_ATTEMPTS = 6;
/** First backoff; doubles per attempt, capped, with jitter so parallel requests do not stampede. */
const BASE_DELAY_MS = 200;
const MAX_DELAY_MS = 10_000;
/** A failing endpoint is passed over for this long before it is tried again. */
const COOLDOWN_MS = 5_000;
/** JSON-RPC codes nodes use for "slow down" or transient trouble. */
const RETRYABLE_RPC_CODES = new Set([-32005, -32007, -32603, 429, -1]);
const RETRYABLE_RPC_MESSAGE =
	/limit exceeded|rate limit|rate-limit|request limit|too many|timeout|timed out|busy|try again|header not found|unavailable/i;
/** "Response too large" (geth's batch answer cap) and "batch too large": retried in smaller batches. */
const BATCH_TOO_LARGE_CODES = new Set([-32003, -32600]);
/** JSON-RPC codes for "this node does not have the method": never retried, the caller falls back. */
const METHOD_NOT_FOUND_CODES = new Set([-32601, -32004]);

export interface RpcClientOptions {
	urls: string[];
	/** Requests issued in the same tick share one HTTP POST, up to this many. */
	batchSize?: number;
	timeoutMs?: number;
	logger: Logger;
	/** For tests: scales every backoff delay. */
	delayScale?: number;
}

export interface RequestOptions {
	/** Send in a POST of its own, with its own timeout: for heavy calls (traces) that would
	 * otherwise hold up, or push over a node's size limit, the batch they share. */
	alone?: boolean;
	timeoutMs?: number;
}

export interface RpcClient {
	request<T>(method: string, params: unknown[], opts?: RequestOptions): Promise<T>;
	/** Counts of failed attempts by kind, for progress and metrics. */
	readonly errors: Record<string, number>;
}

export class RpcError extends ChainlakeError {
	constructor(
		code: "RPC_METHOD_NOT_FOUND" | "RPC_ERROR" | "RPC_UNREACHABLE",
		message: string,
		readonly rpcCode: number | null,
		opts: { cause?: unknown; retryable?: boolean } = {},
	) {
		super(code, message, opts);
		this.name = "RpcError";
	}
}

/**
 * A JSON-RPC client over one or more endpoints. Batches requests (http-batch.ts), retries
 * only what can succeed on retry (HTTP 408/429/5xx, network errors, timeouts, malformed
 * responses, node "limit exceeded" codes) with exponential backoff honouring Retry-After,
 * moves to the next endpoint when one fails, and tries the others before giving up on a request
 * one endpoint refuses.
 */
export function createRpcClient(opts: RpcClientOptions): RpcClient {
	if (opts.urls.length === 0) throw new ChainlakeError("NO_RPC", "no RPC URL given");
	const endpoints = opts.urls.map((url) => ({
		url,
		label: redactUrl(url),
		coolUntil: 0,
		transport: createHttpBatchTransport(url, { batchSize: opts.batchSize ?? 100, timeoutMs: opts.timeoutMs ?? 30_000 }),
	}));
	const errors: Record<string, number> = {};
	let next = 0;

	/** The next endpoint to use: not cooling down, and not one that already refused this request. */
	const pick = (refused: Set<unknown>) => {
		const usable = endpoints.filter((e) => !refused.has(e));
		const now = Date.now();
		for (let i = 0; i < endpoints.length; i++) {
			const e = endpoints[(next + i) % endpoints.length];
			if (e && usable.includes(e) && e.coolUntil <= now) {
				next = (next + i) % endpoints.length;
				return e;
			}
		}
		// All cooling down: take the one that recovers first.
		return usable.reduce((a, b) => (a.coolUntil <= b.coolUntil ? a : b));
	};

	async function request<T>(method: string, params: unknown[], requestOpts: RequestOptions = {}): Promise<T> {
		let last: unknown;
		// Endpoints that refused this request for good (a missing method, HTTP 403, pruned
		// state): the others may still serve it, so only when all refuse does the request fail.
		const refused = new Set<unknown>();
		for (let attempt = 0; attempt < MAX_ATTEMPTS; ) {
			const endpoint = pick(refused);
			try {
				return (await endpoint.transport.request(method, params, requestOpts)) as T;
			} catch (err) {
				const kind = classify(err);
				errors[kind.name] = (errors[kind.name] ?? 0) + 1;
				if (!kind.retryable) {
					refused.add(endpoint);
					if (refused.size < endpoints.length) continue;
					if (kind.name === "method_not_found") {
						throw new RpcError("RPC_METHOD_NOT_FOUND", `${endpoint.label} does not serve ${method}`, rpcCode(err), {
							cause: err,
						});
					}
					throw new RpcError("RPC_ERROR", `${method} failed at ${endpoint.label}: ${shortMessage(err)}`, rpcCode(err), {
						cause: err,
					});
				}
				if (kind.name === "batch_too_large") endpoint.transport.shrinkBatches();
				last = err;
				endpoint.coolUntil = Date.now() + COOLDOWN_MS;
				next = (next + 1) % endpoints.length;
				const backoff = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt) * (0.5 + Math.random() / 2);
				const delay = (kind.retryAfterMs ?? backoff) * (opts.delayScale ?? 1);
				opts.logger.debug(`rpc ${method} at ${endpoint.label}: ${kind.name}, retrying in ${Math.round(delay)} ms`);
				await new Promise((r) => setTimeout(r, delay));
				attempt++;
			}
		}
		const unreachable = classify(last).name === "network";
		throw new RpcError(
			unreachable ? "RPC_UNREACHABLE" : "RPC_ERROR",
			`${method} failed after ${MAX_ATTEMPTS} attempts at ${endpoints.map((e) => e.label).join(", ")}: ${shortMessage(last)}`,
			rpcCode(last),
			{ cause: last, retryable: true },
		);
	}

	return { request, errors };
}

interface ErrorKind {
	name:
		| "method_not_found"
		| "rpc_error"
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
		if (RETRYABLE_RPC_CODES.has(err.code) || RETRYABLE_RPC_MESSAGE.test(err.message)) {
			return { name: "rate_limited", retryable: true };
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

function rpcCode(err: unknown): number | null {
	return err instanceof JsonRpcCallError ? err.code : null;
}

function shortMessage(err: unknown): string {
	if (err instanceof JsonRpcCallError) return `${err.message} (code ${err.code})`;
	return err instanceof Error ? err.message : String(err);
}

/** RPC URLs often carry API keys in the path or query: logs show only scheme, host and port. */
export function redactUrl(url: string): string {
	try {
		const u = new URL(url);
		const hidden = u.pathname.length > 1 || u.search ? "/…" : "";
		return `${u.protocol}//${u.host}${hidden}`;
	} catch {
		return "<invalid url>";
	}
}
