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
	keccak256,
	parseEther,
	parseGwei,
	stringToHex,
	type TransactionReceipt,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { compileContracts } from "./compile.js";
import { lower, Recorder, ZERO } from "./recorder.js";
import type { WorkloadResult, WorkloadTx } from "./types.js";

export type * from "./types.js";

/** Anvil's well-known dev mnemonic; accounts 0..4 are used. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

// Fixed fees (and explicit nonces/gas in the multi-tx block) keep tx hashes
// identical across runs on fresh nodes; anvil's base fee starts at 1 gwei.
const FEES = {
	maxFeePerGas: parseGwei("20"),
	maxPriorityFeePerGas: parseGwei("1"),
};

type Req = {
	to?: Address;
	data?: Hex;
	value?: bigint;
	gas?: bigint;
	nonce?: number;
};
type Extra = Omit<Req, "to" | "data"> & { expectRevert?: boolean };

/**
 * Deploys the workload contracts on a fresh anvil node at `rpcUrl` and runs
 * a fixed script. Returns what it did and what an indexer must find.
 */
export async function runWorkload(opts: { rpcUrl: string }): Promise<WorkloadResult> {
	const artifacts = await compileContracts();
	const transport = http(opts.rpcUrl);
	const chainId = await createPublicClient({ transport }).getChainId();
	const chain = defineChain({
		id: chainId,
		name: "anvil",
		nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
		rpcUrls: { default: { http: [opts.rpcUrl] } },
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
	const { deployer, alice, bob, carol, dave } = accounts;

	/** Deploy tx by `deployer`: a top-level CREATE. */
	const deploy = async (name: string, args: unknown[] = [], value = 0n) => {
		const { abi, bytecode } = artifact(name);
		const data = encodeDeployData({ abi, bytecode, args });
		const t = await exec(`deploy ${name}`, signer.deployer, { data }, { value });
		const contract = t.contractAddress;
		if (!contract) throw new Error(`deploying ${name}: no contract address`);
		rec.creation(t, {
			contract,
			caller: deployer,
			value: value.toString(),
			opCode: "CREATE",
			topLevel: true,
		});
		return contract;
	};

	// --- deployments ---
	const selfDestructValue = parseEther("3");
	const token20 = await deploy("Token20", ["Chainlake Test", "CLT"]);
	const token721 = await deploy("Token721");
	const token1155 = await deploy("Token1155");
	const factory = await deploy("Factory");
	const selfDestructor = await deploy("SelfDestructor", [], selfDestructValue);
	const forwarder = await deploy("Forwarder");
	const reverter = await deploy("Reverter");
	const oddLogger = await deploy("OddLogger");
	const erc20 = on("Token20", token20);
	const erc721 = on("Token721", token721);
	const erc1155 = on("Token1155", token1155);

	// --- plain ETH transfer EOA -> EOA ---
	await exec("eth", signer.deployer, { to: alice }, { value: parseEther("1.5") });

	// --- ERC-20; amounts beyond 2^128 / 2^255 catch lossy numeric columns ---
	const mintAmount = 2n ** 255n + 1000n;
	const bigAmount = 2n ** 200n + 12345n;
	const fromAmount = 2n ** 128n + 1n;
	let t = await erc20("erc20 mint", signer.deployer, "mint", [deployer, mintAmount]);
	rec.erc20(t, token20, ZERO, deployer, mintAmount);
	t = await erc20("erc20 big", signer.deployer, "transfer", [alice, bigAmount]);
	rec.erc20(t, token20, deployer, alice, bigAmount);
	t = await erc20("erc20 small", signer.deployer, "transfer", [bob, 42n]);
	rec.erc20(t, token20, deployer, bob, 42n);
	await erc20("erc20 approve", signer.deployer, "approve", [alice, 2n ** 129n]);
	t = await erc20("erc20 transferFrom", signer.alice, "transferFrom", [deployer, carol, fromAmount]);
	rec.erc20(t, token20, deployer, carol, fromAmount);

	// --- ERC-721 ---
	const bigId = 2n ** 160n + 7n;
	t = await erc721("erc721 mint 1", signer.deployer, "mint", [alice, 1n]);
	rec.erc721(t, token721, ZERO, alice, 1n);
	t = await erc721("erc721 mint big", signer.deployer, "mint", [bob, bigId]);
	rec.erc721(t, token721, ZERO, bob, bigId);
	t = await erc721("erc721 1", signer.alice, "transferFrom", [alice, carol, 1n]);
	rec.erc721(t, token721, alice, carol, 1n);
	await erc721("erc721 approve", signer.bob, "approve", [deployer, bigId]);
	// Sent by the approved operator: tx.from (deployer) != transfer.from (bob).
	t = await erc721("erc721 big", signer.deployer, "transferFrom", [bob, alice, bigId]);
	rec.erc721(t, token721, bob, alice, bigId);

	// --- ERC-1155 ---
	const mints: Array<[bigint, bigint]> = [
		[1n, 100n],
		[2n, 2n ** 200n + 5n],
		[3n, 7n],
	];
	for (const [id, amount] of mints) {
		t = await erc1155(`erc1155 mint ${id}`, signer.deployer, "mint", [alice, id, amount]);
		rec.erc1155(t, token1155, [deployer, ZERO, alice], id, amount);
	}
	t = await erc1155("erc1155 single", signer.alice, "safeTransferFrom", [alice, bob, 1n, 10n, "0x"]);
	rec.erc1155(t, token1155, [alice, alice, bob], 1n, 10n);
	const ids = [1n, 2n, 3n];
	const amounts = [5n, 2n ** 130n + 1n, 3n];
	t = await erc1155("erc1155 batch", signer.alice, "safeBatchTransferFrom", [alice, carol, ids, amounts, "0x"]);
	rec.erc1155Batch(t, token1155, [alice, alice, carol], ids, amounts);

	// --- Factory: nested CREATE (with value) and CREATE2 (without) ---
	const fac = on("Factory", factory);
	const createValue = parseEther("0.25");
	t = await fac("CREATE", signer.alice, "deploy", [], { value: createValue });
	const createChild = await childOf(t.hash);
	rec.native(t, "create", factory, createChild, createValue);
	rec.creation(t, {
		contract: createChild,
		caller: factory,
		value: createValue.toString(),
		opCode: "CREATE",
		topLevel: false,
	});
	const create2Salt = keccak256(stringToHex("chainlake-workload"));
	t = await fac("CREATE2", signer.bob, "deploy2", [create2Salt]);
	const create2Child = await childOf(t.hash);
	rec.creation(t, {
		contract: create2Child,
		caller: factory,
		value: "0",
		opCode: "CREATE2",
		topLevel: false,
	});

	// --- SELFDESTRUCT sends the constructor's ETH to dave ---
	const sd = on("SelfDestructor", selfDestructor);
	t = await sd("selfdestruct", signer.carol, "destroy", [dave]);
	rec.native(t, "selfdestruct", selfDestructor, dave, selfDestructValue);
	rec.selfDestruct(t, {
		contract: selfDestructor,
		beneficiary: dave,
		caller: carol, // destroy() is called directly by the EOA
		value: selfDestructValue.toString(),
	});

	// --- internal value calls (visible only in traces) ---
	const fwd = on("Forwarder", forwarder);
	const fwdValue = parseEther("0.1");
	t = await fwd("forward", signer.alice, "forward", [carol], { value: fwdValue });
	rec.native(t, "call", forwarder, carol, fwdValue);
	const split = parseEther("0.3");
	t = await fwd("split", signer.carol, "split", [bob, dave], { value: split });
	rec.native(t, "call", forwarder, bob, split / 2n);
	rec.native(t, "call", forwarder, dave, split - split / 2n);

	// --- reverts; explicit gas, else viem would estimate and refuse to send ---
	const rev = on("Reverter", reverter);
	const reverted = await rev("reverted", signer.alice, "boom", [bob], {
		value: parseEther("1"),
		gas: 300_000n,
		expectRevert: true,
	});
	// Succeeds and keeps its value; the inner boom() frame is rolled back.
	// Explicit gas too: estimation could pick a limit where boom() runs out of
	// gas instead of reverting, which would make the trace differ.
	const innerRevert = await rev("inner revert", signer.alice, "tryBoom", [bob], {
		value: parseEther("0.05"),
		gas: 300_000n,
	});

	// --- Transfer-topic logs with the wrong shape ---
	const oddLog = on("OddLogger", oddLogger);
	const odd = await oddLog("odd logs", signer.dave, "emitOdd", []);

	// --- several transactions in one block ---
	const nonce = await pub.getTransactionCount({ address: deployer });
	const multi = await mineTogether([
		["multi erc20", signer.deployer, { to: token20, data: calldata("Token20", "transfer", [dave, 777n]), nonce }],
		["multi eth", signer.deployer, { to: carol, value: parseEther("0.5"), gas: 21_000n, nonce: nonce + 1 }],
		["multi erc721", signer.alice, { to: token721, data: calldata("Token721", "transferFrom", [alice, dave, bigId]) }],
		[
			"multi erc1155",
			signer.bob,
			{ to: token1155, data: calldata("Token1155", "safeTransferFrom", [bob, dave, 1n, 4n, "0x"]) },
		],
	]);
	const [m20, , m721, m1155] = multi.txs;
	rec.erc20(m20, token20, deployer, dave, 777n);
	rec.erc721(m721, token721, alice, dave, bigId);
	rec.erc1155(m1155, token1155, [bob, bob, dave], 1n, 4n);

	rec.sort();
	const blocks = rec.txs.map((x) => x.blockNumber);
	return {
		chainId,
		accounts,
		contracts: {
			token20,
			token721,
			token1155,
			factory,
			createChild,
			create2Child,
			selfDestructor,
			forwarder,
			reverter,
			oddLogger,
		},
		create2Salt,
		firstBlock: Math.min(...blocks),
		lastBlock: Math.max(...blocks),
		txs: rec.txs,
		expected: {
			transfers: rec.transfers,
			creations: rec.creations,
			selfDestructs: rec.selfDestructs,
			revertedTxHash: reverted.hash,
			innerRevertTxHash: innerRevert.hash,
			oddLogTxHash: odd.hash,
			oddLogCount: 3,
			multiTxBlock: multi.block,
			erc20Balances: rec.erc20Balances(token20),
			erc721Owners: rec.erc721Owners(token721),
		},
	};

	/** Factory's Deployed event has the child address as topic1. */
	async function childOf(hash: Hex): Promise<Address> {
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
}
