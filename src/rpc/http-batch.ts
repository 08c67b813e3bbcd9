/**
 * JSON-RPC over HTTP with batching: requests made in the same tick go out as one JSON array
 * (up to `batchSize` per POST). Written on fetch rather than viem's http transport because the
 * retry rules need the HTTP status and Retry-After of failed responses, which viem's batch mode
 * drops when the error body is not JSON (a plain-text 429 surfaces as a bare SyntaxError).
 */

/** The node answered with a JSON-RPC error object. */
export class JsonRpcCallError extends Error {
	constructor(
		readonly code: number,
		message: string,
		readonly data?: unknown,
	) {
		super(message);
		this.name = "JsonRpcCallError";
	}
}

/** A transport-level failure: no usable JSON-RPC answer came back. */
export class TransportError extends Error {
	constructor(
		readonly kind: "http_status" | "network" | "timeout" | "bad_response",
		message: string,
		readonly status?: number,
		readonly retryAfterMs?: number,
		options?: { cause?: unknown },
	) {
		super(message, options);
		this.name = "TransportError";
	}
}

interface Pending {
	id: number;
	method: string;
	params: unknown[];
	resolve(value: unknown): void;
	reject(err: unknown): void;
}

export interface HttpBatchTransport {
	request(method: string, params: unknown[]): Promise<unknown>;
}

export function createHttpBatchTransport(
	url: string,
	opts: { batchSize: number; timeoutMs: number },
): HttpBatchTransport {
	let queue: Pending[] = [];
	let nextId = 1;
	let scheduled = false;

	const flush = () => {
		scheduled = false;
		const all = queue;
		queue = [];
		for (let i = 0; i < all.length; i += opts.batchSize) void send(all.slice(i, i + opts.batchSize));
	};

	async function send(batch: Pending[]): Promise<void> {
		const failAll = (err: unknown) => {
			for (const p of batch) p.reject(err);
		};
		let res: Response;
		try {
			res = await fetch(url, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify(batch.map((p) => ({ jsonrpc: "2.0", id: p.id, method: p.method, params: p.params }))),
				signal: AbortSignal.timeout(opts.timeoutMs),
			});
		} catch (err) {
			const timeout = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
			const cause = (err as { cause?: { code?: string; message?: string } }).cause;
			const why = timeout
				? `no answer within ${opts.timeoutMs} ms`
				: `cannot connect (${cause?.code ?? cause?.message ?? String(err)})`;
			failAll(new TransportError(timeout ? "timeout" : "network", why, undefined, undefined, { cause: err }));
			return;
		}
		let text: string;
		try {
			text = await res.text();
		} catch (err) {
			failAll(
				new TransportError("network", `connection lost while reading the answer`, res.status, undefined, {
					cause: err,
				}),
			);
			return;
		}
		if (!res.ok) {
			const retryAfter = parseRetryAfter(res.headers.get("retry-after"));
			failAll(new TransportError("http_status", `HTTP ${res.status}`, res.status, retryAfter));
			return;
		}
		let body: unknown;
		try {
			body = JSON.parse(text);
		} catch (err) {
			failAll(
				new TransportError("bad_response", `unreadable JSON (${text.length} bytes)`, res.status, undefined, {
					cause: err,
				}),
			);
			return;
		}
		// Some nodes answer a whole batch with one error object (rate limits, batches disabled).
		if (!Array.isArray(body)) {
			const e = (body as { error?: { code: number; message: string } }).error;
			failAll(
				e ? new JsonRpcCallError(e.code, e.message) : new TransportError("bad_response", "expected a JSON array"),
			);
			return;
		}
		const byId = new Map<unknown, { result?: unknown; error?: { code: number; message: string; data?: unknown } }>();
		for (const item of body) byId.set((item as { id?: unknown }).id, item);
		for (const p of batch) {
			const item = byId.get(p.id);
			if (!item) p.reject(new TransportError("bad_response", `no answer for request ${p.id} in the batch`));
			else if (item.error) p.reject(new JsonRpcCallError(item.error.code, item.error.message, item.error.data));
			else if (!("result" in item)) p.reject(new TransportError("bad_response", "answer without result or error"));
			else p.resolve(item.result);
		}
	}

	return {
		request(method, params) {
			return new Promise((resolve, reject) => {
				queue.push({ id: nextId++, method, params, resolve, reject });
				if (!scheduled) {
					scheduled = true;
					setImmediate(flush);
				}
			});
		},
	};
}

function parseRetryAfter(value: string | null): number | undefined {
	if (!value) return undefined;
	const seconds = Number(value);
	if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
	const at = Date.parse(value);
	return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
