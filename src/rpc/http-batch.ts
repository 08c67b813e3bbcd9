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
	/** `alone` sends the request in its own POST with its own timeout (heavy calls such as traces). */
	request(method: string, params: unknown[], opts?: { alone?: boolean; timeoutMs?: number }): Promise<unknown>;
	/** Halves the batch size (down to 1), for nodes that refuse or truncate large batches. */
	shrinkBatches(): void;
}

export function createHttpBatchTransport(
	url: string,
	opts: { batchSize: number; timeoutMs: number },
): HttpBatchTransport {
	let queue: Pending[] = [];
	let nextId = 1;
	let scheduled = false;
	let batchSize = opts.batchSize;

	const flush = () => {
		scheduled = false;
		const all = queue;
		queue = [];
		for (let i = 0; i < all.length; i += batchSize) void send(all.slice(i, i + batchSize), opts.timeoutMs);
	};

	async function send(batch: Pending[], timeoutMs: number): Promise<void> {
		const failAll = (err: unknown) => {
			for (const p of batch) p.reject(err);
		};
		let res: Response;
		try {
			res = await fetch(url, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify(batch.map((p) => ({ jsonrpc: "2.0", id: p.id, method: p.method, params: p.params }))),
				signal: AbortSignal.timeout(timeoutMs),
			});
		} catch (err) {
			const timeout = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
			const cause = (err as { cause?: { code?: string; message?: string } }).cause;
			const why = timeout
				? `no answer within ${timeoutMs} ms`
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
		settle(batch, body);
	}

	/** Matches answers to requests; anything malformed fails its request (never throws here). */
	function settle(batch: Pending[], body: unknown): void {
		const failAll = (err: unknown) => {
			for (const p of batch) p.reject(err);
		};
		const items = Array.isArray(body) ? body : [body];
		if (!Array.isArray(body)) {
			// A lone object: the answer to a batch of one, or one error for the whole batch
			// (rate limits, batches disabled).
			const b = body as { id?: unknown; error?: unknown } | null;
			const only = batch.length === 1 && b != null && typeof b === "object" && String(b.id) === String(batch[0]?.id);
			if (!only) {
				failAll(
					b != null && typeof b === "object" && b.error != null
						? callError(b.error)
						: new TransportError("bad_response", "expected a JSON array"),
				);
				return;
			}
		}
		const byId = new Map<string, { result?: unknown; error?: unknown }>();
		for (const item of items) {
			if (item != null && typeof item === "object" && "id" in item) byId.set(String(item.id), item);
		}
		for (const p of batch) {
			const item = byId.get(String(p.id));
			if (!item) p.reject(new TransportError("bad_response", `no answer for request ${p.id} in the batch`));
			else if (item.error != null) p.reject(callError(item.error));
			else if (!("result" in item)) p.reject(new TransportError("bad_response", "answer without result or error"));
			else p.resolve(item.result);
		}
	}

	return {
		shrinkBatches() {
			batchSize = Math.max(1, Math.floor(batchSize / 2));
		},
		request(method, params, requestOpts = {}) {
			return new Promise((resolve, reject) => {
				const pending = { id: nextId++, method, params, resolve, reject };
				if (requestOpts.alone) {
					void send([pending], requestOpts.timeoutMs ?? opts.timeoutMs);
					return;
				}
				queue.push(pending);
				if (!scheduled) {
					scheduled = true;
					setImmediate(flush);
				}
			});
		},
	};
}

/** A JSON-RPC error object, or what a node sent in its place (some send a bare string). */
function callError(e: unknown): JsonRpcCallError {
	if (e != null && typeof e === "object") {
		const o = e as { code?: unknown; message?: unknown; data?: unknown };
		return new JsonRpcCallError(
			typeof o.code === "number" ? o.code : -1,
			String(o.message ?? "error without message"),
			o.data,
		);
	}
	return new JsonRpcCallError(-1, String(e));
}

function parseRetryAfter(value: string | null): number | undefined {
	if (!value) return undefined;
	const seconds = Number(value);
	if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
	const at = Date.parse(value);
	return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
