import { afterEach, describe, expect, it } from "vitest";
import { createRpcClient, RpcError } from "../../src/rpc/client.js";
import { redactUrl } from "../../src/rpc/redact-url.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { deadUrl, startScriptedRpc } from "../helpers/scripted-rpc.js";

const ok = () => ({ result: "0x1" });
const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
	await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(...args: Parameters<typeof startScriptedRpc>) {
	const s = await startScriptedRpc(...args);
	servers.push(s);
	return s;
}

const client = (urls: string[]) => createRpcClient({ urls, logger: createMemoryLogger(), delayScale: 0.01 });

describe("rpc client retries by classification", () => {
	it("retries HTTP 429 (honouring Retry-After) and 5xx, then succeeds", async () => {
		const s = await serve(
			[
				{ status: 429, body: "slow down", headers: { "Retry-After": "1" } },
				{ status: 503, body: "unavailable" },
			],
			ok,
		);
		const rpc = client([s.url]);
		const started = Date.now();
		await expect(rpc.request("eth_chainId", [])).resolves.toBe("0x1");
		expect(s.hits).toBe(3);
		// Retry-After: 1 s scaled by delayScale 0.01 = 10 ms at least.
		expect(Date.now() - started).toBeGreaterThanOrEqual(10);
		expect(rpc.errors).toMatchObject({ rate_limited: 1, http_error: 1 });
	});

	it("retries a truncated JSON body and a node 'limit exceeded' error", async () => {
		const s = await serve(
			[
				{ status: 200, body: '{"jsonrpc":"2.0","id":0,"res' },
				() => ({ error: { code: -32005, message: "limit exceeded" } }),
			],
			ok,
		);
		const rpc = client([s.url]);
		await expect(rpc.request("eth_chainId", [])).resolves.toBe("0x1");
		expect(s.hits).toBe(3);
	});

	it("does not retry an invalid-params error, and says what failed", async () => {
		const s = await serve([], () => ({ error: { code: -32602, message: "invalid argument 0" } }));
		const rpc = client([s.url]);
		const err = await rpc.request("eth_getBlockByNumber", ["bad", true]).catch((e: unknown) => e);
		expect(err).toBeInstanceOf(RpcError);
		expect((err as RpcError).code).toBe("RPC_ERROR");
		expect((err as RpcError).message).toMatch(/eth_getBlockByNumber failed.*invalid argument 0/);
		expect(s.hits).toBe(1);
	});

	it("reports a missing method without retrying it", async () => {
		const s = await serve([], () => ({ error: { code: -32601, message: "the method trace_block does not exist" } }));
		const err = await client([s.url])
			.request("trace_block", ["0x1"])
			.catch((e: unknown) => e);
		expect((err as RpcError).code).toBe("RPC_METHOD_NOT_FOUND");
		expect(s.hits).toBe(1);
	});

	it("skips a dead endpoint and uses the next", async () => {
		const s = await serve([], ok);
		const rpc = client([await deadUrl(), s.url]);
		await expect(rpc.request("eth_chainId", [])).resolves.toBe("0x1");
		await expect(rpc.request("eth_chainId", [])).resolves.toBe("0x1");
		expect(rpc.errors.network).toBe(1);
	});

	it("gives up on unreachable endpoints with RPC_UNREACHABLE, after bounded attempts", async () => {
		const rpc = client([await deadUrl(), await deadUrl()]);
		const err = await rpc.request("eth_chainId", []).catch((e: unknown) => e);
		expect((err as RpcError).code).toBe("RPC_UNREACHABLE");
		expect((err as RpcError).message).toMatch(/cannot connect/);
		expect(rpc.errors.network).toBe(6);
	});

	it("batches requests issued together into one HTTP request", async () => {
		const s = await serve([], ok);
		const rpc = client([s.url]);
		await Promise.all(Array.from({ length: 10 }, () => rpc.request("eth_chainId", [])));
		expect(s.hits).toBe(1);
	});
});

describe("redactUrl", () => {
	it("hides paths and queries, which often hold API keys", () => {
		expect(redactUrl("https://eth.example.com/v2/SECRETKEY")).toBe("https://eth.example.com/…");
		expect(redactUrl("http://127.0.0.1:8545")).toBe("http://127.0.0.1:8545");
		expect(redactUrl("https://x.example/?key=abc")).toBe("https://x.example/…");
	});
});
