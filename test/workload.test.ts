import {
	type Address,
	createPublicClient,
	getContractAddress,
	type Hex,
	http,
	keccak256,
	type PublicClient,
	stringToHex,
	toHex,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilInstance, startAnvil } from "../src/workload/anvil.js";
import { compileContracts } from "../src/workload/compile.js";
import { runWorkload, type WorkloadResult } from "../src/workload/run.js";

const TIMEOUT = 120_000;
const TRANSFER_TOPIC = keccak256(stringToHex("Transfer(address,address,uint256)"));

let anvil: AnvilInstance;
let client: PublicClient;
let result: WorkloadResult;

/** Untyped JSON-RPC, for anvil-specific methods viem does not model. */
async function rpc(method: string, params: unknown[]): Promise<unknown> {
	const res = await fetch(anvil.url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
	});
	const body = (await res.json()) as {
		result?: unknown;
		error?: { message: string };
	};
	if (body.error) throw new Error(`${method}: ${body.error.message}`);
	return body.result;
}

beforeAll(async () => {
	const t0 = Date.now();
	await compileContracts();
	const t1 = Date.now();
	anvil = await startAnvil();
	client = createPublicClient({ transport: http(anvil.url) });
	const t2 = Date.now();
	result = await runWorkload({ rpcUrl: anvil.url });
	console.log(`compile ${t1 - t0}ms, anvil start ${t2 - t1}ms, workload ${Date.now() - t2}ms`);
}, TIMEOUT);

afterAll(async () => {
	await anvil?.stop();
});

describe("workload on anvil", () => {
	it("every recorded tx is on chain with the recorded status", async () => {
		for (const tx of result.txs) {
			const receipt = await client.getTransactionReceipt({ hash: tx.hash });
			expect(Number(receipt.blockNumber), tx.label).toBe(tx.blockNumber);
			expect(receipt.status, tx.label).toBe(tx.status);
		}
		const hashes = new Set(result.txs.map((t) => t.hash));
		for (const t of result.expected.transfers) expect(hashes.has(t.txHash)).toBe(true);
		for (const c of result.expected.creations) expect(hashes.has(c.txHash)).toBe(true);
		expect(result.firstBlock).toBe(1);
		expect(result.lastBlock).toBe(result.expected.multiTxBlock.number);
	});

	it("the reverted tx is mined with status 0, no logs and no expected transfers", async () => {
		const hash = result.expected.revertedTxHash;
		const receipt = (await rpc("eth_getTransactionReceipt", [hash])) as {
			status: Hex;
			logs: unknown[];
		};
		expect(receipt.status).toBe("0x0");
		expect(receipt.logs).toEqual([]);
		expect(result.expected.transfers.filter((t) => t.txHash === hash)).toEqual([]);
		// The try/catch tx succeeds but only its top-level value counts.
		const inner = result.expected.transfers.filter((t) => t.txHash === result.expected.innerRevertTxHash);
		expect(inner.map((t) => t.via)).toEqual(["tx"]);
	});

	it("ERC-20 balances and ERC-721 owners match the expected transfers", async () => {
		const { abi } = (await compileContracts()).Token20 ?? fail("Token20");
		for (const [holder, balance] of Object.entries(result.expected.erc20Balances)) {
			const onChain = await client.readContract({
				address: result.contracts.token20,
				abi,
				functionName: "balanceOf",
				args: [holder],
			});
			expect(String(onChain), holder).toBe(balance);
		}
		const nft = (await compileContracts()).Token721 ?? fail("Token721");
		for (const [id, owner] of Object.entries(result.expected.erc721Owners)) {
			const onChain = (await client.readContract({
				address: result.contracts.token721,
				abi: nft.abi,
				functionName: "ownerOf",
				args: [BigInt(id)],
			})) as Address;
			expect(onChain.toLowerCase()).toBe(owner);
		}
	});

	it("factory children are at the CREATE / CREATE2 addresses", async () => {
		const child = (await compileContracts()).Child ?? fail("Child");
		const { factory, create2Child, createChild } = result.contracts;
		const c2 = getContractAddress({
			opcode: "CREATE2",
			from: factory,
			salt: result.create2Salt,
			bytecode: child.bytecode,
		});
		expect(c2.toLowerCase()).toBe(create2Child);
		// Contract nonces start at 1 (EIP-161); deploy() was the factory's first create.
		expect(getContractAddress({ from: factory, nonce: 1n }).toLowerCase()).toBe(createChild);
		expect(await client.getBalance({ address: createChild })).toBe(250_000_000_000_000_000n);
		expect(await client.getCode({ address: create2Child })).toMatch(/^0x[0-9a-f]{10,}/);
	});

	it("self-destruct beneficiary received the contract balance", async () => {
		const sd = result.expected.selfDestructs[0] ?? fail("selfDestruct");
		const n = BigInt(sd.blockNumber);
		const before = await client.getBalance({
			address: sd.beneficiary,
			blockNumber: n - 1n,
		});
		const after = await client.getBalance({
			address: sd.beneficiary,
			blockNumber: n,
		});
		expect(after - before).toBe(BigInt(sd.value));
		expect(await client.getBalance({ address: sd.contract })).toBe(0n);
	});

	it("one block holds several workload txs", async () => {
		const { number, txHashes } = result.expected.multiTxBlock;
		const block = await client.getBlock({ blockNumber: BigInt(number) });
		expect(block.transactions.length).toBeGreaterThanOrEqual(3);
		expect(block.transactions).toEqual(txHashes);
	});

	it("odd Transfer-topic logs have non-standard shapes", async () => {
		const receipt = await client.getTransactionReceipt({
			hash: result.expected.oddLogTxHash,
		});
		expect(receipt.logs.map((l) => l.topics.length)).toEqual([1, 2, 3]);
		expect(receipt.logs.every((l) => l.topics[0] === TRANSFER_TOPIC)).toBe(true);
		expect(receipt.logs).toHaveLength(result.expected.oddLogCount);
	});

	it(
		"is deterministic across fresh nodes",
		async () => {
			const other = await startAnvil();
			try {
				expect(await runWorkload({ rpcUrl: other.url })).toEqual(result);
			} finally {
				await other.stop();
			}
		},
		TIMEOUT,
	);

	// Probe (and pin) anvil's trace formats, which the backfill has to parse.
	it("probe: trace_block / debug_traceBlockByNumber / eth_getBlockReceipts", async () => {
		const create2 = result.expected.creations.find((c) => c.opCode === "CREATE2") ?? fail("create2");
		const sd = result.expected.selfDestructs[0] ?? fail("selfDestruct");
		const probe = async (label: string, blockNumber: number) => {
			const parity = (await rpc("trace_block", [toHex(blockNumber)])) as Array<Record<string, unknown>>;
			const geth = (await rpc("debug_traceBlockByNumber", [toHex(blockNumber), { tracer: "callTracer" }])) as unknown[];
			console.log(`${label} trace_block:`, JSON.stringify(parity, null, 1));
			console.log(`${label} callTracer:`, JSON.stringify(geth, null, 1));
			return { parity, geth };
		};

		const c2 = await probe("CREATE2", create2.blockNumber);
		const createTrace = c2.parity.find((t) => t.type === "create") ?? fail("create trace");
		expect(createTrace.action).toMatchObject({
			from: result.contracts.factory,
			creationMethod: "create2",
		});
		expect(createTrace.result).toMatchObject({
			address: result.contracts.create2Child,
		});
		expect(JSON.stringify(c2.geth)).toContain('"type":"CREATE2"');

		const s = await probe("SELFDESTRUCT", sd.blockNumber);
		const suicide = s.parity.find((t) => t.type === "suicide") ?? fail("suicide trace");
		expect(suicide.action).toEqual({
			address: sd.contract,
			refundAddress: sd.beneficiary,
			balance: toHex(BigInt(sd.value)),
		});
		expect(JSON.stringify(s.geth)).toContain('"type":"SELFDESTRUCT"');

		const receipts = (await rpc("eth_getBlockReceipts", [toHex(result.expected.multiTxBlock.number)])) as unknown[];
		console.log(`eth_getBlockReceipts: ${receipts.length} receipts`);
		expect(receipts).toHaveLength(result.expected.multiTxBlock.txHashes.length);
	});
});

function fail(what: string): never {
	throw new Error(`missing ${what}`);
}
