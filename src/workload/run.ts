import { keccak256, parseEther, stringToHex } from "viem";
import { ZERO } from "./recorder.js";
import { openSession } from "./session.js";
import type { WorkloadResult } from "./types.js";

export type * from "./types.js";

/**
 * Deploys the workload contracts on a fresh anvil node at `rpcUrl` and runs
 * a fixed script. Returns what it did and what an indexer must find.
 */
export async function runWorkload(opts: { rpcUrl: string }): Promise<WorkloadResult> {
	const { chainId, pub, rec, signer, accounts, calldata, exec, on, deploy, childOf, mineTogether } = await openSession(
		opts.rpcUrl,
	);
	const { deployer, alice, bob, carol, dave } = accounts;

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
	const createChild = await childOf(t.hash, factory);
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
	const create2Child = await childOf(t.hash, factory);
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
}
