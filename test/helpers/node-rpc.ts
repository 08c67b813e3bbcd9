/** One plain JSON-RPC call to a test node (anvil), for node-side actions the tests drive:
 * sending transactions, mining, reorgs. Throws on a JSON-RPC error. */
export async function nodeCall(url: string, method: string, params: unknown[] = []): Promise<unknown> {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
	});
	const body = (await res.json()) as { result?: unknown; error?: { message: string } };
	if (body.error) throw new Error(`${method}: ${body.error.message}`);
	return body.result;
}
