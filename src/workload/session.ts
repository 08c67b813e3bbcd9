import {
	type Account,
	type Address,
	createPublicClient,
	createTestClient,
	createWalletClient,
	defineChain,
	encodeDeployData,
	encodeFunctionData,
	type Hex,
	http,
	parseGwei,
	type TransactionReceipt,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { compileContracts } from "./compile.js";
import { lower, Recorder } from "./recorder.js";
import type { WorkloadTx } from "./types.js";

/*
 * What the workload script (run.ts) acts through: the compiled contracts, viem clients on one
 * anvil node, the five dev accounts, and steps that send a transaction, wait for its receipt and
 * record it (throwing unless it reverted exactly when planned). Kept apart so run.ts reads as
 * the script: which transactions, in which order, and what an indexer must find.
 */

/** Anvil's well-known dev mnemonic; accounts 0..4 are used. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

// Fixed fees (and explicit nonces/gas in the multi-tx block) keep tx hashes
// identical across runs on fresh nodes; anvil's base fee starts at 1 gwei.
const FEES = {
	maxFeePerGas: parseGwei("20"),
	maxPriorityFeePerGas: parseGwei("1"),
};

export type Req = {
	to?: Address;
	data?: Hex;
	value?: bigint;
	gas?: bigint;
	nonce?: number;
};
export type Extra = Omit<Req, "to" | "data"> & { expectRevert?: boolean };

export type WorkloadSession = Awaited<ReturnType<typeof openSession>>;

/** Compiles the contracts and connects to the fresh anvil node at `rpcUrl`. */
export async function openSession(rpcUrl: string) {
	const artifacts = await compileContracts();
	const transport = http(rpcUrl);
	const chainId = await createPublicClient({ transport }).getChainId();
	const chain = defineChain({
		id: chainId,
		name: "anvil",
		nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
		rpcUrls: { default: { http: [rpcUrl] } },
	});
	const pub = createPublicClient({ chain, transport, pollingInterval: 25 });
	const wallet = createWalletClient({ chain, transport });
	const testClient = createTestClient({ chain, transport, mode: "anvil" });
	const rec = new Recorder();

	const artifact = (name: string) => {
		const a = artifacts[name];
		if (!a) throw new Error(`contract ${name} not compiled`);
		return a;
	};
	const calldata = (name: string, functionName: string, args: unknown[]) =>
		encodeFunctionData({ abi: artifact(name).abi, functionName, args });
	const submit = (from: Account, req: Req) => wallet.sendTransaction({ account: from, chain, ...FEES, ...req });
	const receipt = (hash: Hex) => pub.waitForTransactionReceipt({ hash, pollingInterval: 25 });

	/** Records a receipt; throws unless it (did not) revert as planned. */
	const check = (label: string, r: TransactionReceipt, x: Extra) => {
		const t = rec.tx(label, r, x.value ?? 0n);
		if ((t.status === "reverted") !== (x.expectRevert ?? false)) {
			throw new Error(`workload step "${label}": unexpected ${t.status}`);
		}
		return t;
	};
	const exec = async (label: string, from: Account, req: Req, x: Extra) =>
		check(label, await receipt(await submit(from, { ...req, ...x })), x);

	/** Binds a contract: on(name, addr)(label, signer, fn, args, extra?). */
	const on =
		(name: string, to: Address) =>
		(label: string, from: Account, fn: string, args: unknown[], x: Extra = {}) =>
			exec(label, from, { to, data: calldata(name, fn, args) }, x);

	const hd = (addressIndex: number): Account => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex });
	const signer = {
		deployer: hd(0),
		alice: hd(1),
		bob: hd(2),
		carol: hd(3),
		dave: hd(4),
	};
	const accounts = {
		deployer: lower(signer.deployer.address),
		alice: lower(signer.alice.address),
		bob: lower(signer.bob.address),
		carol: lower(signer.carol.address),
		dave: lower(signer.dave.address),
	};

	/** Deploy tx by `deployer`: a top-level CREATE. */
	const deploy = async (name: string, args: unknown[] = [], value = 0n) => {
		const { abi, bytecode } = artifact(name);
		const data = encodeDeployData({ abi, bytecode, args });
		const t = await exec(`deploy ${name}`, signer.deployer, { data }, { value });
		const contract = t.contractAddress;
		if (!contract) throw new Error(`deploying ${name}: no contract address`);
		rec.creation(t, {
			contract,
			caller: accounts.deployer,
			value: value.toString(),
			opCode: "CREATE",
			topLevel: true,
		});
		return contract;
	};

	/** Factory's Deployed event has the child address as topic1. */
	async function childOf(hash: Hex, factory: Address): Promise<Address> {
		const r = await pub.getTransactionReceipt({ hash });
		const topic = r.logs.find((l) => lower(l.address) === factory)?.topics[1];
		if (!topic) throw new Error("factory emitted no Deployed event");
		return lower(`0x${topic.slice(26)}`);
	}

	/**
	 * Sends the txs with automine off, so they wait in the pool, then mines
	 * them into one block. Returns the recorded txs (in the given order) and
	 * the block with the hashes in block order.
	 */
	async function mineTogether<const P extends Array<[string, Account, Req]>>(
		plan: P,
	): Promise<{
		txs: { [K in keyof P]: WorkloadTx };
		block: { number: number; txHashes: Hex[] };
	}> {
		await testClient.setAutomine(false);
		const hashes: Hex[] = [];
		try {
			// Explicit gas: estimating against `latest` would ignore the pooled txs.
			for (const [, from, req] of plan) hashes.push(await submit(from, { gas: 150_000n, ...req }));
			await testClient.mine({ blocks: 1 });
		} finally {
			await testClient.setAutomine(true);
		}
		const receipts = await Promise.all(hashes.map(receipt));
		const number = receipts[0]?.blockNumber ?? -1n;
		if (receipts.some((r) => r.blockNumber !== number)) {
			throw new Error("multi-tx block: txs landed in different blocks");
		}
		const recorded = receipts.map((r, i) => {
			const [label, , req] = plan[i] ?? [];
			return check(label ?? "", r, { value: req?.value });
		});
		const { transactions } = await pub.getBlock({ blockNumber: number });
		const txHashes = transactions.filter((h) => hashes.includes(h));
		// Same length and order as `plan`, so the tuple mapping holds.
		const txs = recorded as { [K in keyof P]: WorkloadTx };
		return { txs, block: { number: Number(number), txHashes } };
	}

	return { chainId, pub, rec, signer, accounts, calldata, exec, on, deploy, childOf, mineTogether };
}
