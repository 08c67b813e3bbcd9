import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { compareBlockHash } from "../../src/rpc/actions.js";
import { classify } from "../../src/rpc/classify-error.js";
import { createRpcClient, RpcError } from "../../src/rpc/client.js";
import { detectTraceFormat } from "../../src/rpc/detect-traces.js";
import { JsonRpcCallError } from "../../src/rpc/http-batch.js";
import { nodeStatus } from "../../src/rpc/rpc-health.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { deadUrl, startScriptedRpc } from "../helpers/scripted-rpc.js";

/** The client against the faults a flaky node or a load-balanced pool plays (real HTTP servers
 * playing the node: these faults cannot be provoked from anvil). */
const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
	await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function serve(...args: Parameters<typeof startScriptedRpc>) {
	const s = await startScriptedRpc(...args);
	servers.push(s);
	return s;
}
const client = (urls: string[], more: { delayScale?: number; timeoutMs?: number; heavyTimeoutMs?: number } = {}) =>
	createRpcClient({ urls, logger: createMemoryLogger(), delayScale: 0.01, ...more });
const HASH = `0x${"aa".repeat(32)}`;
const OTHER = `0x${"bb".repeat(32)}`;

describe("Retry-After", () => {
	it("holds back every request to the node until it runs out, not only the refused one", async () => {
		// Arrival times, and a 429 with Retry-After: 1 for the first POST.
		const arrivals: number[] = [];
		const server = createServer((req, res) => {
			let body = "";
			req.on("data", (c) => {
				body += c;
			});
			req.on("end", () => {
				arrivals.push(Date.now());
				if (arrivals.length === 1) {
					res.writeHead(429, { "retry-after": "1" });
					res.end("Too Many Requests");
					return;
				}
				const calls = JSON.parse(body) as { id: unknown }[];
				res.setHeader("content-type", "application/json");
				res.end(JSON.stringify(calls.map((c) => ({ jsonrpc: "2.0", id: c.id, result: "0x1" }))));
			});
		});
		await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
		servers.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
		// delayScale 0.3: the 1 s Retry-After becomes 300 ms.
		const rpc = client([`http://127.0.0.1:${(server.address() as AddressInfo).port}`], { delayScale: 0.3 });
		const first = rpc.request("eth_chainId", []);
		while (!rpc.errors.rate_limited) await new Promise((r) => setTimeout(r, 2));
		// Another caller's request, made after the 429 arrived: it waits too.
		const second = rpc.request("eth_blockNumber", []);
		await expect(Promise.all([first, second])).resolves.toEqual(["0x1", "0x1"]);
		// Both went out after the pause (together, or one after the other on a busy machine).
		expect(arrivals.length).toBeGreaterThanOrEqual(2);
		for (const t of arrivals.slice(1)) expect(t - (arrivals[0] as number)).toBeGreaterThanOrEqual(290);
	});
});

describe("error kinds", () => {
	it("tells a rate limit from a transient node error (both retried)", () => {
		const kind = (code: number, message: string) => classify(new JsonRpcCallError(code, message));
		expect(kind(-32005, "limit exceeded")).toMatchObject({ name: "rate_limited", retryable: true });
		expect(kind(-32000, "header not found")).toMatchObject({ name: "node_error", retryable: true });
		expect(kind(-32603, "internal error")).toMatchObject({ name: "node_error", retryable: true });
		expect(kind(-32000, "execution reverted")).toMatchObject({ name: "rpc_error", retryable: false });
	});

	it("gives heavy requests their own timeout", async () => {
		// A node that never answers: the heavy request gives up after heavyTimeoutMs per attempt.
		const server = createServer(() => {});
		await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
		servers.push({
			close: () =>
				new Promise<void>((r) => {
					server.closeAllConnections();
					server.close(() => r());
				}),
		});
		const rpc = client([`http://127.0.0.1:${(server.address() as AddressInfo).port}`], {
			timeoutMs: 60_000,
			heavyTimeoutMs: 50,
		});
		const started = Date.now();
		const err = await rpc.request("trace_block", ["0x1"], { heavy: true }).catch((e: unknown) => e);
		expect(err).toBeInstanceOf(RpcError);
		expect((err as Error).message).toContain("no answer within 50 ms");
		expect(rpc.errors.timeout).toBe(6);
		expect(Date.now() - started).toBeLessThan(5_000);
	});
});

describe("node health", () => {
	it("is ok, then degraded after a failure, with the last error, and ok again a minute later", async () => {
		const s = await serve([{ status: 502, body: "<html>bad gateway</html>" }], () => ({ result: "0x1" }));
		const rpc = client([s.url]);
		expect(nodeStatus(rpc.health)).toEqual({ status: "ok", window_seconds: 60, attempts: 0, failures: 0 });
		await rpc.request("eth_chainId", []);
		expect(nodeStatus(rpc.health)).toMatchObject({ status: "degraded", attempts: 2, failures: 1 });
		expect(rpc.health.lastError).toMatchObject({ kind: "http_error", message: expect.stringContaining("HTTP 502") });
		expect(nodeStatus(rpc.health, Date.now() + 61_000)).toMatchObject({ status: "ok", attempts: 0 });
	});

	it("is down when nothing but failures came back for 30 s", async () => {
		const rpc = client([await deadUrl()]);
		await expect(rpc.request("eth_chainId", [])).rejects.toThrow(RpcError);
		expect(nodeStatus(rpc.health).status).toBe("degraded");
		expect(nodeStatus(rpc.health, Date.now() + 31_000).status).toBe("down");
	});

	it("counts answers found wrong, reported by the caller, without counting a request", () => {
		const rpc = client(["http://127.0.0.1:1"]);
		rpc.reportFault("inconsistent", "block 5 of another fork");
		expect(rpc.errors).toEqual({ inconsistent: 1 });
		expect(nodeStatus(rpc.health)).toMatchObject({ status: "degraded", attempts: 0, failures: 1 });
	});
});

describe("compareBlockHash", () => {
	/** A node answering eth_getBlockByNumber with these hashes in turn (null: no such block). */
	const answering = (...hashes: (string | null)[]) =>
		serve(
			hashes.map((h) => () => ({ result: h && { hash: h } })),
			() => ({ result: { hash: HASH } }),
		);

	it("takes one odd answer for a fault, not a reorg", async () => {
		const rpc = client([(await answering(OTHER, HASH)).url]);
		expect(await compareBlockHash(rpc, 7, HASH)).toBe("same");
		expect(rpc.errors).toEqual({ inconsistent: 1 });
	});

	it("takes the same other hash, asked three times, for a reorg", async () => {
		const rpc = client([(await answering(OTHER, OTHER, OTHER)).url]);
		expect(await compareBlockHash(rpc, 7, HASH)).toBe("different");
		expect(rpc.errors).toEqual({});
	});

	it("takes a block the node lacks for a node behind, not a reorg", async () => {
		const rpc = client([(await answering(null, null, null)).url]);
		expect(await compareBlockHash(rpc, 7, HASH)).toBe("missing");
		expect(rpc.errors).toEqual({ missing_block: 1 });
	});
});

describe("trace detection on a lagging node", () => {
	it("asks again when the node lacks the probe block, rather than failing or calling it traceless", async () => {
		const s = await serve([() => ({ result: null }), () => ({ result: null })], () => ({ result: [] }));
		expect(await detectTraceFormat(client([s.url]), "auto", 5, createMemoryLogger())).toBe("parity");
		expect(s.hits).toBe(3);
	});
});
