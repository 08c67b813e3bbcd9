import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

interface RpcRequest {
	id: unknown;
	method: string;
	params?: unknown[];
}

/**
 * A JSON-RPC proxy in front of a real node (anvil) that can refuse methods, to play a node
 * without some capability (no trace API, no eth_getBlockReceipts) — anvil itself serves them all —
 * or answer slowly, to play a distant node (so a test can interrupt a run midway).
 */
export async function startRpcProxy(target: string, opts: { refuse?: string[]; delayMs?: number } = {}) {
	const refused = new Set(opts.refuse ?? []);
	const calls: string[] = [];
	const server = createServer((req, res) => {
		let body = "";
		req.on("data", (c) => {
			body += c;
		});
		req.on("end", async () => {
			const parsed = JSON.parse(body) as RpcRequest | RpcRequest[];
			const list = Array.isArray(parsed) ? parsed : [parsed];
			for (const r of list) calls.push(r.method);
			if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
			const forward = list.filter((r) => !refused.has(r.method));
			const answers = new Map<unknown, unknown>();
			if (forward.length > 0) {
				const upstream = await fetch(target, {
					method: "POST",
					headers: { "content-type": "application/json" },
					body: JSON.stringify(forward),
				});
				for (const a of (await upstream.json()) as { id: unknown }[]) answers.set(a.id, a);
			}
			const out = list.map(
				(r) =>
					answers.get(r.id) ?? {
						jsonrpc: "2.0",
						id: r.id,
						error: { code: -32601, message: `the method ${r.method} does not exist/is not available` },
					},
			);
			res.setHeader("content-type", "application/json");
			res.end(JSON.stringify(Array.isArray(parsed) ? out : out[0]));
		});
	});
	await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}`,
		calls,
		close: () => new Promise<void>((r) => server.close(() => r())),
	};
}
