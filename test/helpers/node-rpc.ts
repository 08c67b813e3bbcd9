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

/** The block a transaction was mined in, polling its receipt (for up to 2 s). */
export async function receiptBlock(url: string, hash: unknown): Promise<number> {
	for (let i = 0; i < 200; i++) {
		const receipt = (await nodeCall(url, "eth_getTransactionReceipt", [hash])) as { blockNumber: string } | null;
		if (receipt) return Number(receipt.blockNumber);
		await new Promise((r) => setTimeout(r, 10));
	}
	throw new Error(`transaction ${String(hash)} not mined after 2 s`);
}

/** Sends a transaction and waits until it is mined and the node's eth_blockNumber has caught up
 * with its block: right after eth_sendTransaction, anvil's eth_blockNumber can still report the
 * block before. Returns the transaction's block number. */
export async function sendMined(url: string, tx: Record<string, string>): Promise<number> {
	const block = await receiptBlock(url, await nodeCall(url, "eth_sendTransaction", [tx]));
	for (let i = 0; i < 200; i++) {
		if (Number(await nodeCall(url, "eth_blockNumber")) >= block) return block;
		await new Promise((r) => setTimeout(r, 10));
	}
	throw new Error(`eth_blockNumber still below block ${block} after 2 s`);
}
