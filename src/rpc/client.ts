import { ChainlakeError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";
import { classify, MAX_DELAY_MS, rpcCode, shortMessage } from "./classify-error.js";
import { createHttpBatchTransport } from "./http-batch.js";
import { redactUrl } from "./redact-url.js";
import { type RpcHealth, recordAttempt } from "./rpc-health.js";

/** Attempts per request across all endpoints before giving up (a node restart takes seconds). */
const MAX_ATTEMPTS = 6;
/** First backoff; doubles per attempt, capped, with jitter so parallel requests do not stampede. */
const BASE_DELAY_MS = 200;
/** A failing endpoint is passed over for this long before it is tried again. */
const COOLDOWN_MS = 5_000;

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
	/** Counts one attempt into the health figures (rpc-health.ts). */
	const record = (failure: { kind: string; message: string } | null, counted = true) =>
		recordAttempt(health, errors, failure, counted);

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
