import { type Abi, encodeFunctionData } from "viem";
import { compileContracts } from "./compile.js";
import type { WorkloadContracts } from "./types.js";

/** Fixed fees and gas so anvil never has to estimate (estimation would double the RPC work). */
const TX_FIELDS = { maxFeePerGas: "0x4a817c800", maxPriorityFeePerGas: "0x3b9aca00", gas: "0x7a120" };
const TOKEN_SEED = 10n ** 30n;

export interface ActivityOptions {
	rpcUrl: string;
	/** From a prior runWorkload on the same chain. */
	contracts: WorkloadContracts;
	blocks: number;
	txsPerBlock: number;
	/** Mint the token balances the transfers move (once per chain; default true). */
	seed?: boolean;
	/** Where in the activity cycle to begin, so successive calls vary (default 0). */
	startIndex?: number;
}

/** One JSON-RPC batch; the results in call order, or an error naming `label` and the method that failed. */
export async function rpcBatch(
	url: string,
	calls: { method: string; params: unknown[] }[],
	label = "activity",
): Promise<unknown[]> {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(calls.map((c, id) => ({ jsonrpc: "2.0", id, ...c }))),
	});
	const out = (await res.json()) as { id: number; result?: unknown; error?: { message: string } }[];
	return out
		.sort((a, b) => a.id - b.id)
		.map((r) => {
			if (r.error) throw new Error(`${label}: ${calls[r.id]?.method}: ${r.error.message}`);
			return r.result;
		});
}

/**
 * Steady, mixed activity on an anvil chain that already ran the workload: per block
 * `txsPerBlock` transactions from anvil's unlocked dev accounts, cycling through native
 * transfers, ERC-20 transfers, internal value forwards, ERC-1155 transfers, ERC-721 mints,
 * factory deploys, and now and then a reverting call. Blocks are mined explicitly, so each holds
 * exactly that many transactions
 * if the block gas limit admits them (500,000 gas each; otherwise the rest go in the next blocks). Used by the backfill benchmark (and the demo chain).
 */
export async function generateActivity(opts: ActivityOptions): Promise<{ blocks: number; txs: number }> {
	const artifacts = await compileContracts();
	const abi = (name: string): Abi => {
		const a = artifacts[name];
		if (!a) throw new Error(`contract ${name} not compiled`);
		return a.abi;
	};
	const call = (name: string, functionName: string, args: unknown[]) =>
		encodeFunctionData({ abi: abi(name), functionName, args });
	const [accounts] = (await rpcBatch(opts.rpcUrl, [{ method: "eth_accounts", params: [] }])) as [string[]];
	const c = opts.contracts;
	// Nonces are given, not left to anvil: a batch holding several transactions of one account
	// is not sent in order, and two that anvil numbered alike were refused as "replacement
	// transaction underpriced" (150 transactions a block from 10 accounts is 15 each).
	const counts = (await rpcBatch(
		opts.rpcUrl,
		accounts.map((a) => ({ method: "eth_getTransactionCount", params: [a, "pending"] })),
	)) as string[];
	const nonces = new Map(accounts.map((a, i) => [a, BigInt(counts[i] as string)]));
	const send = (from: string, to: string, data = "0x", value = "0x0") => {
		const nonce = nonces.get(from) ?? 0n;
		nonces.set(from, nonce + 1n);
		return {
			method: "eth_sendTransaction",
			params: [{ from, to, data, value, nonce: `0x${nonce.toString(16)}`, ...TX_FIELDS }],
		};
	};
	let mined = 0;
	const mine = async (txs: ReturnType<typeof send>[]) => {
		await rpcBatch(opts.rpcUrl, txs);
		await rpcBatch(opts.rpcUrl, [{ method: "evm_mine", params: [] }]);
		mined++;
		// A block holds what its gas limit admits (each transaction counts its 500,000 gas limit:
		// 60 under anvil's default 30M); what is left waits in the pool: mine until it is empty.
		for (;;) {
			const [status] = (await rpcBatch(opts.rpcUrl, [{ method: "txpool_status", params: [] }])) as [
				{ pending: string; queued: string },
			];
			if (BigInt(status.pending) + BigInt(status.queued) === 0n) break;
			await rpcBatch(opts.rpcUrl, [{ method: "evm_mine", params: [] }]);
			mined++;
		}
	};

	await rpcBatch(opts.rpcUrl, [{ method: "evm_setAutomine", params: [false] }]);
	try {
		// Seed every account with ERC-20 and ERC-1155 balances to move around.
		const seed = opts.seed ?? true;
		if (seed) {
			await mine(
				accounts.flatMap((a) => [
					send(a, c.token20, call("Token20", "mint", [a, TOKEN_SEED])),
					send(a, c.token1155, call("Token1155", "mint", [a, 1n, TOKEN_SEED])),
				]),
			);
		}
		const first = opts.startIndex ?? 0;
		let n = first;
		for (let b = 0; b < opts.blocks; b++) {
			const txs = [];
			for (let t = 0; t < opts.txsPerBlock; t++, n++) {
				const from = accounts[n % accounts.length] as string;
				const to = accounts[(n * 7 + 3) % accounts.length] as string;
				const wei = `0x${(10n ** 15n * BigInt((n % 97) + 1)).toString(16)}`;
				if (n % 53 === 52) txs.push(send(from, c.reverter, call("Reverter", "boom", [to]), wei));
				else if (n % 6 === 0) txs.push(send(from, to, "0x", wei));
				else if (n % 6 === 1)
					txs.push(send(from, c.token20, call("Token20", "transfer", [to, BigInt(n + 1) * 10n ** 18n])));
				else if (n % 6 === 2) txs.push(send(from, c.forwarder, call("Forwarder", "forward", [to]), wei));
				else if (n % 6 === 3) {
					txs.push(send(from, c.token1155, call("Token1155", "safeTransferFrom", [from, to, 1n, BigInt(n + 1), "0x"])));
				} else if (n % 6 === 4)
					txs.push(send(from, c.token721, call("Token721", "mint", [to, 1_000_000n + BigInt(n)])));
				else txs.push(send(from, c.factory, call("Factory", "deploy", []), wei));
			}
			await mine(txs);
		}
		return { blocks: mined, txs: n - first + (seed ? accounts.length * 2 : 0) };
	} finally {
		await rpcBatch(opts.rpcUrl, [{ method: "evm_setAutomine", params: [true] }]);
	}
}
