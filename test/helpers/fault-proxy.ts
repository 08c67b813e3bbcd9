import { createHash } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** The faults the proxy plays, each as a real node or load balancer does it. */
export const FAULT_KINDS = [
	/** One call of the POST answered with a JSON-RPC error ("header not found", "internal error"). */
	"rpc_error",
	/** HTTP 500/502/503 with an HTML body, as a load balancer answers when a backend is down. */
	"http_error",
	/** No answer at all: the request is held until the client gives up. */
	"timeout",
	/** The connection is closed without an answer. */
	"reset",
	/** HTTP 429 with a Retry-After header. */
	"rate_limited",
	/** A 200 whose JSON body is cut off partway. */
	"truncated",
	/** A backend some blocks behind: a lower eth_blockNumber, null for blocks above its head. */
	"lagging",
	/** A backend on another fork: blocks (and their receipts, traces) under other hashes. */
	"fork",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultProxyOptions {
	/** Chance that a POST is faulted (default 0.2). */
	rate?: number;
	/** PRNG seed (default 6, or CHAINLAKE_FAULT_SEED): the same seed plays the same faults for the
	 * same sequence of requests. Concurrent clients vary that sequence a little from run to run. */
	seed?: number;
	kinds?: readonly FaultKind[];
	/** Retry-After of a 429, in seconds (default 1). */
	retryAfterSeconds?: number;
	/** The lagging backend is 1..maxLag blocks behind (default 8). */
	maxLag?: number;
}

interface Call {
	jsonrpc?: string;
	id: unknown;
	method: string;
	params?: unknown[];
}
type Answer = { jsonrpc: "2.0"; id: unknown; result?: unknown; error?: { code: number; message: string } };

/** Calls about one block by number: what a lagging backend lacks and a forked one answers differently. */
const BY_NUMBER = new Set(["eth_getBlockByNumber", "eth_getBlockReceipts", "trace_block", "debug_traceBlockByNumber"]);
/** Time after a 429 during which a request may still arrive that the client sent before it saw the 429. */
const IN_FLIGHT_GRACE_MS = 250;

/** mulberry32: a small, fast, seedable PRNG (Math.random cannot be seeded). */
function prng(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

const hex = (n: number) => `0x${n.toString(16)}`;
const blockOf = (c: Call): number | null => {
	const p = c.params?.[0];
	return BY_NUMBER.has(c.method) && typeof p === "string" && /^0x[0-9a-f]+$/i.test(p) ? Number(p) : null;
};
/** The other fork's hash for a canonical hash: deterministic, so the fork is one consistent chain. */
const forkHash = (h: string) => `0x${createHash("sha256").update(`fork:${h.toLowerCase()}`).digest("hex")}`;

/**
 * An HTTP JSON-RPC proxy in front of a real node (anvil) that faults a share of the POSTs it
 * forwards, playing a flaky node or a load-balanced pool with a bad backend: the faults anvil
 * cannot produce itself. Each POST is faulted with probability `rate`, independently; the kind is
 * the least-injected one that applies to the POST (ties broken by the PRNG), so that a short run
 * still plays every kind: "lagging" applies only to calls near the head, "fork" only to calls
 * about a block. `faults` counts what was injected, by kind.
 */
export async function startFaultProxy(target: string, opts: FaultProxyOptions = {}) {
	const seed = opts.seed ?? Number(process.env.CHAINLAKE_FAULT_SEED ?? 6);
	const random = prng(seed);
	const kinds = opts.kinds ?? FAULT_KINDS;
	const retryAfter = opts.retryAfterSeconds ?? 1;
	const maxLag = opts.maxLag ?? 8;
	let rate = opts.rate ?? 0.2;
	const faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
	const stats = {
		/** POSTs received, and JSON-RPC calls in them. */
		requests: 0,
		calls: 0,
		/** POSTs that arrived while a Retry-After the proxy sent was still running (beyond the grace
		 * for requests already in flight): a client that does not honour Retry-After. */
		early: 0,
	};
	let retryWindow: { from: number; until: number } | null = null;
	const held = new Set<ServerResponse>();
	const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;

	async function upstream(calls: Call[]): Promise<Map<unknown, Answer>> {
		const answers = new Map<unknown, Answer>();
		if (calls.length === 0) return answers;
		const res = await fetch(target, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify(calls),
		});
		for (const a of (await res.json()) as Answer[]) answers.set(a.id, a);
		return answers;
	}
	const head = async () =>
		Number((await upstream([{ jsonrpc: "2.0", id: 0, method: "eth_blockNumber" }])).get(0)?.result);

	/** The kinds that would change the answer to these calls (lagging needs the node's head). */
	async function applicable(calls: Call[]): Promise<{ kinds: FaultKind[]; head: number | null }> {
		const blocks = calls.map(blockOf).filter((n): n is number => n != null);
		let nodeHead: number | null = null;
		const out = kinds.filter((k) => k !== "lagging" && (k !== "fork" || blocks.some((n) => n >= 1)));
		if (kinds.includes("lagging")) {
			const asksHead = calls.some((c) => c.method === "eth_blockNumber");
			if (asksHead || blocks.length > 0) nodeHead = await head();
			if (asksHead || blocks.some((n) => nodeHead != null && n > nodeHead - maxLag)) out.push("lagging");
		}
		return { kinds: out, head: nodeHead };
	}

	async function answer(calls: Call[], kind: FaultKind | null, nodeHead: number | null): Promise<Answer[]> {
		if (kind === "lagging" && nodeHead != null) {
			// Behind by enough to lack at least one block asked for (or to report an older head).
			const top = Math.max(-1, ...calls.map(blockOf).filter((n): n is number => n != null));
			const least = Math.max(1, nodeHead - top + 1);
			const lag = least + Math.floor(random() * Math.max(1, maxLag - least + 1));
			const lagged = Math.max(0, nodeHead - lag);
			const local = (c: Call): Answer | null => {
				if (c.method === "eth_blockNumber") return { jsonrpc: "2.0", id: c.id, result: hex(lagged) };
				const n = blockOf(c);
				return n != null && n > lagged ? { jsonrpc: "2.0", id: c.id, result: null } : null;
			};
			const answers = await upstream(calls.filter((c) => local(c) == null));
			return calls.map((c) => local(c) ?? (answers.get(c.id) as Answer));
		}
		const answers = await upstream(calls);
		const out = calls.map((c) => answers.get(c.id) as Answer);
		if (kind === "rpc_error") {
			const i = Math.floor(random() * out.length);
			const error = pick([
				{ code: -32000, message: "header not found" },
				{ code: -32603, message: "internal error" },
			]);
			out[i] = { jsonrpc: "2.0", id: calls[i]?.id, error };
		}
		if (kind === "fork") {
			calls.forEach((c, i) => {
				const n = blockOf(c);
				const a = out[i];
				if (n != null && n >= 1 && a?.result != null) a.result = fork(c.method, n, a.result);
			});
		}
		return out;
	}

	/** The same content as the canonical block, under the other fork's hashes (its chain splits off
	 * after block 1, so block 1 keeps the canonical parent: genesis). */
	function fork(method: string, n: number, result: unknown): unknown {
		const rehash = (o: { blockHash?: string }) => {
			if (typeof o.blockHash === "string") o.blockHash = forkHash(o.blockHash);
		};
		if (method === "eth_getBlockByNumber") {
			const b = result as { hash: string; parentHash: string; transactions: unknown[] };
			b.hash = forkHash(b.hash);
			if (n >= 2) b.parentHash = forkHash(b.parentHash);
			for (const tx of b.transactions) if (typeof tx === "object" && tx) rehash(tx as { blockHash?: string });
		} else if (method === "eth_getBlockReceipts") {
			for (const r of result as { blockHash: string; logs: { blockHash: string }[] }[]) {
				rehash(r);
				for (const l of r.logs) rehash(l);
			}
		} else if (method === "trace_block") {
			for (const t of result as { blockHash: string }[]) rehash(t);
		}
		return result;
	}

	const server = createServer((req, res) => {
		const arrived = Date.now();
		let body = "";
		req.on("data", (c) => {
			body += c;
		});
		req.on("end", async () => {
			stats.requests++;
			if (retryWindow && arrived > retryWindow.from + IN_FLIGHT_GRACE_MS && arrived < retryWindow.until) {
				stats.early++;
			}
			try {
				const parsed = JSON.parse(body) as Call | Call[];
				const calls = Array.isArray(parsed) ? parsed : [parsed];
				stats.calls += calls.length;
				let kind: FaultKind | null = null;
				let nodeHead: number | null = null;
				if (random() < rate) {
					const options = await applicable(calls);
					nodeHead = options.head;
					const least = Math.min(...options.kinds.map((k) => faults[k]));
					kind = pick(options.kinds.filter((k) => faults[k] === least));
					faults[kind]++;
				}
				switch (kind) {
					case "http_error": {
						const status = pick([500, 502, 503]);
						res.writeHead(status, { "content-type": "text/html" });
						res.end(`<html><body><h1>${status}</h1>upstream unavailable</body></html>`);
						return;
					}
					case "rate_limited":
						retryWindow = { from: Date.now(), until: Date.now() + retryAfter * 1000 };
						res.writeHead(429, { "content-type": "text/plain", "retry-after": String(retryAfter) });
						res.end("Too Many Requests");
						return;
					case "reset":
						req.socket.destroy();
						return;
					case "timeout":
						// Held until the client aborts (or the proxy closes); never answered.
						held.add(res);
						res.on("close", () => held.delete(res));
						return;
				}
				const out = await answer(calls, kind, nodeHead);
				const text = JSON.stringify(Array.isArray(parsed) ? out : out[0]);
				res.setHeader("content-type", "application/json");
				// A valid start, cut off: at least one character, never the closing bracket.
				res.end(kind === "truncated" ? text.slice(0, 1 + Math.floor(random() * (text.length - 1))) : text);
			} catch (err) {
				res.writeHead(500, { "content-type": "text/plain" });
				res.end(`fault proxy: ${(err as Error).message}`);
			}
		});
	});
	await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}`,
		seed,
		faults,
		stats,
		/** Changes the fault rate from now on (0 turns faults off). */
		setRate(r: number) {
			rate = r;
		},
		close: () =>
			new Promise<void>((r) => {
				for (const res of held) res.destroy();
				server.closeAllConnections();
				server.close(() => r());
			}),
	};
}

export type FaultProxy = Awaited<ReturnType<typeof startFaultProxy>>;
