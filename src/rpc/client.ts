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
/** How far back the health figures look, for "is the node faulty now" rather than "ever". */
const HEALTH_WINDOW_S = 60;
/** Nothing but failures for this long: the node is down, not just flaky. */
const DOWN_AFTER_MS = 30_000;

export interface RpcClientOptions {
	urls: string[];
	/** Requests issued in the same tick share one HTTP POST, up to this many. */
	batchSize?: number;
	timeoutMs?: number;
	/** Timeout of heavy requests (traces), which get a POST of their own; default 180 s. */
	heavyTimeoutMs?: number;
	logger: Logger;
	/** For tests: scales every backoff delay. */
	delayScale?: number;
}

export interface RequestOptions {
	/** Send in a POST of its own, with the longer `heavyTimeoutMs`: for heavy calls (traces) that
	 * would otherwise hold up, or push over a node's size limit, the batch they share. */
	heavy?: boolean;
}

/** What the client has seen of its node(s), for readiness and metrics. Updated in place. */
export interface RpcHealth {
	/** Attempts sent, and those that failed (including answers found wrong, see `reportFault`). */
	attempts: number;
	failures: number;
	/** When the current run of failed attempts began (null once one succeeds). */
	failingSince: number | null;
	lastError: { at: number; kind: string; message: string } | null;
	/** Per second of the last HEALTH_WINDOW_S: [unix second, attempts, failures]. */
	recent: [number, number, number][];
}

export interface RpcClient {
	request<T>(method: string, params: unknown[], opts?: RequestOptions): Promise<T>;
	/** Counts of failed attempts (and of answers found wrong, see `reportFault`) by kind, for
	 * progress, readiness and metrics. */
	readonly errors: Record<string, number>;
	readonly health: RpcHealth;
	/** Records an answer that arrived but proved wrong (a block the node lacks, a block of another
	 * fork): no transport error, yet a node fault an operator should see. */
	reportFault(kind: string, message: string): void;
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
		/** Set by a Retry-After: nothing is sent to this endpoint before then. */
		retryAt: 0,
		transport: createHttpBatchTransport(url, { batchSize: opts.batchSize ?? 100, timeoutMs: opts.timeoutMs ?? 30_000 }),
	}));
	const errors: Record<string, number> = {};
	const health: RpcHealth = { attempts: 0, failures: 0, failingSince: null, lastError: null, recent: [] };
	let next = 0;

	/** Counts one attempt into the health figures; `failure` names its kind and what happened. */
	const record = (failure: { kind: string; message: string } | null, counted = true) => {
		const now = Date.now();
		const second = Math.floor(now / 1000);
		let bucket = health.recent.at(-1);
		if (bucket?.[0] !== second) {
			bucket = [second, 0, 0];
			health.recent.push(bucket);
			while ((health.recent[0]?.[0] ?? second) <= second - HEALTH_WINDOW_S) health.recent.shift();
		}
		if (counted) {
			health.attempts++;
			bucket[1]++;
		}
		if (!failure) {
			health.failingSince = null;
			return;
		}
		errors[failure.kind] = (errors[failure.kind] ?? 0) + 1;
		health.failures++;
		health.failingSince ??= now;
		bucket[2]++;
		health.lastError = { at: now, ...failure };
	};

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
		const sendOpts = requestOpts.heavy ? { alone: true, timeoutMs: opts.heavyTimeoutMs ?? 180_000 } : {};
		for (let attempt = 0; attempt < MAX_ATTEMPTS; ) {
			const endpoint = pick(refused);
			// A node that said when to come back (429/503 with Retry-After) gets no request before
			// then, from any caller: it limits the client, not one request, and hammering it on
			// makes the limit last longer.
			const wait = endpoint.retryAt - Date.now();
			if (wait > 0) await new Promise((r) => setTimeout(r, wait));
			try {
				const result = (await endpoint.transport.request(method, params, sendOpts)) as T;
				record(null);
				return result;
			} catch (err) {
				const kind = classify(err);
				record({ kind: kind.name, message: `${method} at ${endpoint.label}: ${shortMessage(err)}` });
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
				if (kind.retryAfterMs !== undefined) {
					endpoint.retryAt = Math.max(endpoint.retryAt, Date.now() + kind.retryAfterMs * (opts.delayScale ?? 1));
				}
				endpoint.coolUntil = Math.max(Date.now() + COOLDOWN_MS, endpoint.retryAt);
				next = (next + 1) % endpoints.length;
				attempt++;
				// No wait after the last attempt: nothing follows it but the error, which a command
				// at start (a dead URL) should print now, not after its longest backoff.
				if (attempt >= MAX_ATTEMPTS) break;
				const backoff = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
				const delay = (kind.retryAfterMs ?? backoff) * (opts.delayScale ?? 1);
				opts.logger.debug(`rpc ${method} at ${endpoint.label}: ${kind.name}, retrying in ${Math.round(delay)} ms`);
				await new Promise((r) => setTimeout(r, delay));
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

	return {
		request,
		errors,
		health,
		reportFault(kind, message) {
			// Not a request of its own (the answer was counted when it arrived), but a failure.
			record({ kind, message }, false);
		},
	};
}

/** The node as the client sees it now: "down" when every attempt has failed for DOWN_AFTER_MS,
 * "degraded" when some attempt failed within the last HEALTH_WINDOW_S, else "ok". */
export function nodeStatus(
	health: RpcHealth,
	now = Date.now(),
): {
	status: "ok" | "degraded" | "down";
	window_seconds: number;
	attempts: number;
	failures: number;
} {
	const since = Math.floor(now / 1000) - HEALTH_WINDOW_S;
	let attempts = 0;
	let failures = 0;
	for (const [second, a, f] of health.recent) {
		if (second <= since) continue;
		attempts += a;
		failures += f;
	}
	const down = health.failingSince != null && now - health.failingSince >= DOWN_AFTER_MS;
	const status = down ? "down" : failures > 0 ? "degraded" : "ok";
	return { status, window_seconds: HEALTH_WINDOW_S, attempts, failures };
}

interface ErrorKind {
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
