/**
 * The recorded-response JSON-RPC server (test/fixtures/recorded-rpc.ts) over real HTTP: a block,
 * a batch, -32601 for methods nobody recorded, and chainlake's own client and extractor on top.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extractBlock } from "../../src/extract/extract-block.js";
import { ethBlockNumber, ethChainId, fetchBlockBundle } from "../../src/rpc/actions.js";
import { createRpcClient, RpcError } from "../../src/rpc/client.js";
import type { RpcBlock } from "../../src/rpc/types.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type RecordedRpcServer, startRecordedRpc } from "../fixtures/recorded-rpc.js";

async function post(url: string, body: unknown): Promise<unknown> {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	expect(res.status).toBe(200);
	return res.json();
}

describe("recorded mainnet JSON-RPC server", () => {
	let rpc: RecordedRpcServer;
	beforeAll(async () => {
		rpc = await startRecordedRpc();
	});
	afterAll(async () => {
		await rpc.close();
	});

	it("serves a recorded block", async () => {
		const res = (await post(rpc.url, {
			jsonrpc: "2.0",
			id: 7,
			method: "eth_getBlockByNumber",
			params: ["0x76250", true],
		})) as { id: number; result: RpcBlock };
		expect(res.id).toBe(7);
		expect(res.result.hash).toBe("0x246edb4b351d93c27926f4649bcf6c24366e2a7c7c718dc9158eea20c03bc6ae");
		expect(res.result.transactions).toHaveLength(4);
	});

	it("answers a batch in order, including traces with an object param", async () => {
		const res = (await post(rpc.url, [
			{ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
			{
				jsonrpc: "2.0",
				id: 2,
				method: "eth_getTransactionReceipt",
				params: ["0x2e3dcd051a91d3a694f6b8de2ac4b5fe7acdba55f58bcf8471ff00d4a430074d"],
			},
			{ jsonrpc: "2.0", id: 3, method: "debug_traceBlockByNumber", params: ["0xf44f2", { tracer: "callTracer" }] },
			{ jsonrpc: "2.0", id: 4, method: "eth_blockNumber", params: [] },
			{ jsonrpc: "2.0", id: 5, method: "eth_getBlockByNumber", params: ["0x999999", true] },
		])) as { id: number; result: unknown }[];
		expect(res.map((r) => r.id)).toEqual([1, 2, 3, 4, 5]);
		expect(res[0]?.result).toBe("0x1234");
		expect(res[1]?.result).toMatchObject({ blockNumber: "0x1ac9f3" });
		expect(res[2]?.result).toHaveLength(2);
		// The highest block recorded with full transactions.
		expect(res[3]?.result).toBe("0x1ac9f3");
		// A known method with unrecorded params: null, as a node answers for a block it lacks.
		expect(res[4]?.result).toBeNull();
		expect(rpc.requests.slice(-5)).toEqual([
			"eth_chainId",
			"eth_getTransactionReceipt",
			"debug_traceBlockByNumber",
			"eth_blockNumber",
			"eth_getBlockByNumber",
		]);
	});

	it("answers -32601 for eth_getBlockReceipts, which nobody recorded", async () => {
		const res = (await post(rpc.url, {
			jsonrpc: "2.0",
			id: 1,
			method: "eth_getBlockReceipts",
			params: ["0x76250"],
		})) as { error: { code: number; message: string } };
		expect(res.error.code).toBe(-32601);
		expect(res.error.message).toMatch(/method not found/);
	});

	it("feeds chainlake's client, which falls back from eth_getBlockReceipts to per-transaction receipts", async () => {
		const client = createRpcClient({ urls: [rpc.url], logger: createMemoryLogger(), delayScale: 0 });
		expect(await ethChainId(client)).toBe(0x1234);
		expect(await ethBlockNumber(client)).toBe(0x1ac9f3);
		const caps = { blockReceipts: true };
		const bundle = await fetchBlockBundle(client, 0x76250, null, caps);
		expect(caps.blockReceipts).toBe(false);
		const rows = extractBlock(bundle);
		expect(rows.transactions).toHaveLength(4);
		expect(rows.logs).toHaveLength(2);
		expect(rows.transfers.filter((t) => t.token_standard === "erc20")).toHaveLength(2);
		expect(rpc.requests.filter((m) => m === "eth_getTransactionReceipt").length).toBeGreaterThanOrEqual(4);
	});
});

describe("recorded mainnet JSON-RPC server with options", () => {
	it("answers -32601 for disabled methods and the eth_blockNumber it is given", async () => {
		const rpc = await startRecordedRpc({ disable: ["trace_block"], blockNumber: 0xf4240 });
		try {
			const client = createRpcClient({ urls: [rpc.url], logger: createMemoryLogger(), delayScale: 0 });
			await expect(client.request("trace_block", ["0xf4240"])).rejects.toSatisfy(
				(err) => err instanceof RpcError && err.code === "RPC_METHOD_NOT_FOUND",
			);
			expect(await ethBlockNumber(client)).toBe(1_000_000);
			expect(await client.request("debug_traceBlockByNumber", ["0xf4240", { tracer: "callTracer" }])).toHaveLength(2);
			expect(rpc.requests).toEqual(["trace_block", "eth_blockNumber", "debug_traceBlockByNumber"]);
		} finally {
			await rpc.close();
		}
	});
});
