import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export type Reply =
	| { status: number; body: string; headers?: Record<string, string> }
	| ((request: { method: string; id: unknown }) => unknown);

/**
 * A real HTTP server that answers JSON-RPC from a script of replies, one per HTTP request, for
 * testing the client's retry and failover rules against genuine HTTP behaviour. (A stand-in
 * node: the faults it plays — 429s, 5xx, truncated bodies — cannot be provoked from anvil.)
 */
export async function startScriptedRpc(script: Reply[], fallback: Reply) {
	let hits = 0;
	const server: Server = createServer((req, res) => {
		let body = "";
		req.on("data", (c) => {
			body += c;
		});
		req.on("end", () => {
			const reply = script[hits] ?? fallback;
			hits++;
			if (typeof reply === "function") {
				const parsed = JSON.parse(body);
				const one = (r: { method: string; id: unknown }) => ({ jsonrpc: "2.0", id: r.id, ...(reply(r) as object) });
				res.setHeader("content-type", "application/json");
				res.end(JSON.stringify(Array.isArray(parsed) ? parsed.map(one) : one(parsed)));
				return;
			}
			res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
			res.end(reply.body);
		});
	});
	await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}`,
		get hits() {
			return hits;
		},
		close: () => new Promise<void>((r) => server.close(() => r())),
	};
}

/** A port on loopback where nothing listens (bound, then released). */
export async function deadUrl(): Promise<string> {
	const s = createServer();
	await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
	const { port } = s.address() as AddressInfo;
	await new Promise<void>((r) => s.close(() => r()));
	return `http://127.0.0.1:${port}`;
}
