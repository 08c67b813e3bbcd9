import { afterEach, describe, expect, it } from "vitest";
import { createRpcClient } from "../../src/rpc/client.js";
import { detectTraceFormat } from "../../src/rpc/detect-traces.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { startScriptedRpc } from "../helpers/scripted-rpc.js";

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
const ok = () => ({ result: "0x1" });

describe("rpc client: endpoint faults and odd answers", () => {
	it("tries the next endpoint when one refuses for good (HTTP 403)", async () => {
		const bad = await serve([], { status: 403, body: "forbidden" });
		const good = await serve([], ok);
		await expect(client([bad.url, good.url]).request("eth_chainId", [])).resolves.toBe("0x1");
		expect(bad.hits).toBe(1);
	});

	it("uses the endpoint that serves a method another lacks", async () => {
		const lacking = await serve([], () => ({ error: { code: -32601, message: "method not found" } }));
		const serving = await serve([], ok);
		await expect(client([lacking.url, serving.url]).request("trace_block", ["0x1"])).resolves.toBe("0x1");
	});

	it("retries a batch answer with a null item or a null body, without crashing", async () => {
		const s = await serve(
			[
				{ status: 200, body: "[null]" },
				{ status: 200, body: "null" },
			],
			ok,
		);
		await expect(client([s.url]).request("eth_chainId", [])).resolves.toBe("0x1");
		expect(s.hits).toBe(3);
	});

	it("accepts a bare object answering a batch of one, and string ids", async () => {
		const s = await serve([], ok);
		await expect(client([s.url]).request("eth_chainId", [])).resolves.toBe("0x1");
		const bare = await serve([{ status: 200, body: '{"jsonrpc":"2.0","id":"1","result":"0x2"}' }], ok);
		await expect(client([bare.url]).request("eth_chainId", [])).resolves.toBe("0x2");
	});

	it("retries an error sent as a bare string (a provider's rate limit)", async () => {
		const s = await serve([() => ({ error: "daily request limit exceeded" })], ok);
		await expect(client([s.url]).request("eth_chainId", [])).resolves.toBe("0x1");
		expect(s.hits).toBe(2);
	});

	it("retries 'response too large' in smaller batches", async () => {
		const s = await serve([() => ({ error: { code: -32003, message: "response too large" } })], ok);
		await expect(client([s.url]).request("eth_chainId", [])).resolves.toBe("0x1");
	});

	it("trace detection does not mark a rate-limiting node as traceless", async () => {
		const s = await serve([], { status: 429, body: "slow down" });
		const err = await detectTraceFormat(client([s.url]), "auto", 5, createMemoryLogger()).catch((e: unknown) => e);
		expect((err as { retryable?: boolean }).retryable).toBe(true);
	});
});
