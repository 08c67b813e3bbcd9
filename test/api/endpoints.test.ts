/**
 * Every API endpoint against what the Solidity workload DID on a real anvil chain.
 *
 * The workload (src/workload) records each transaction it sent and every transfer, creation and
 * self-destruct the chain must therefore show (`WorkloadResult.expected`). The node itself is the
 * other source of truth: blocks and receipts (logs) are read from anvil over JSON-RPC. Nothing here
 * is compared with an earlier answer of the service, except where a test checks that two ways of
 * asking (order=desc, NDJSON/CSV/Arrow) carry the same items.
 *
 * The workload emits LOG1..LOG4 but no LOG0, so one extra transaction (a constructor that runs
 * LOG0, sent from anvil's unlocked dev account #5) is mined after it and backfilled on top, before
 * the API answers its first query.
 */
import { tableFromIPC } from "apache-arrow";
import { type Address, type Block, createPublicClient, type Hex, http, type Log, type TransactionReceipt } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExpectedCreation, ExpectedTransfer, WorkloadTx } from "../../src/workload/types.js";
import { parseCsv } from "../fixtures/mainnet.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { AUTH, type NodeApiFixture, startApiOnNode } from "../helpers/api.js";

type Item = Record<string, unknown>;
interface Envelope {
	range: { has_more: boolean; start_block: number; end_block: number; next_offset: string | null };
	items: Item[];
}
type Asset = "native" | "ft" | "nft" | "multi";

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
/** anvil's dev account #5 (unlocked, unused by the workload). */
const EXTRA_SENDER = "0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc" as Address;
/** Init code: MSTORE(0, 0xabcd); LOG0(0, 32); STOP. Deploys an empty contract and emits one LOG0. */
const LOG0_INIT_CODE = "0x61abcd60005260206000a000";
const ID = /^[0-9a-f]{16}-[0-9a-f]{4}-[0-9a-f]{8}$/;

let f: NodeApiFixture;
let v1: string;
let head: number;
const nodeBlocks: Block[] = [];
const receipts = new Map<string, TransactionReceipt>();
/** The workload's transactions plus the LOG0 deploy, in chain order. */
let allTxs: WorkloadTx[];
let allCreations: ExpectedCreation[];
let log0Tx: WorkloadTx;

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
	});
	const body = (await res.json()) as { result?: T; error?: { message: string } };
	if (body.error) throw new Error(`${method}: ${body.error.message}`);
	return body.result as T;
}

beforeAll(async () => {
	f = await startApiOnNode();
	v1 = `/${f.chain}/v1`;
	const node = createPublicClient({ transport: http(f.anvil.url) });

	// One more block with a LOG0, backfilled on top of the workload's blocks.
	const hash = await rpc<Hex>(f.anvil.url, "eth_sendTransaction", [
		{ from: EXTRA_SENDER, data: LOG0_INIT_CODE, gas: "0x30000" },
	]);
	const r = await node.waitForTransactionReceipt({ hash, pollingInterval: 25 });
	if (!r.contractAddress) throw new Error("LOG0 deploy created no contract");
	log0Tx = {
		label: "LOG0 deploy",
		hash,
		blockNumber: Number(r.blockNumber),
		transactionIndex: r.transactionIndex,
		status: r.status,
		from: EXTRA_SENDER,
		to: null,
		contractAddress: r.contractAddress.toLowerCase() as Address,
		value: "0",
	};
	await backfillInto(f.dataDir, f.anvil.url, 31337, {
		from: f.work.lastBlock + 1,
		to: log0Tx.blockNumber,
		partitionSize: 8,
	});

	head = log0Tx.blockNumber;
	for (let n = 0; n <= head; n++) nodeBlocks.push(await node.getBlock({ blockNumber: BigInt(n) }));
	allTxs = [...f.work.txs, log0Tx];
	for (const tx of allTxs) receipts.set(tx.hash, await node.getTransactionReceipt({ hash: tx.hash }));
	allCreations = [
		...f.work.expected.creations,
		{
			txHash: log0Tx.hash,
			blockNumber: log0Tx.blockNumber,
			contract: log0Tx.contractAddress as Address,
			caller: EXTRA_SENDER,
			origin: EXTRA_SENDER,
			value: "0",
			opCode: "CREATE",
			topLevel: true,
		},
	];
});

afterAll(async () => {
	await f?.close();
});

// ---------------------------------------------------------------------------------------------
// helpers

const w = () => f.work;
const blockAt = (n: number): Block => {
	const b = nodeBlocks[n];
	if (!b) throw new Error(`no node block ${n}`);
	return b;
};
const txOf = (hash: string): WorkloadTx => {
	const t = allTxs.find((x) => x.hash === hash);
	if (!t) throw new Error(`unknown tx ${hash}`);
	return t;
};
const receiptOf = (hash: string): TransactionReceipt => {
	const r = receipts.get(hash);
	if (!r) throw new Error(`no receipt for ${hash}`);
	return r;
};
const pick = (o: Item, keys: string[]) => Object.fromEntries(keys.map((k) => [k, o[k]]));

/** GET that must answer 200 with the list envelope of api-contract.md §5. */
async function list(path: string): Promise<Envelope> {
	const r = await f.get(path);
	expect(r.status, `${path}: ${r.raw}`).toBe(200);
	expect(Object.keys(r.body).sort(), path).toEqual(["items", "range"]);
	const env = r.body as unknown as Envelope;
	expect(Object.keys(env.range).sort(), path).toEqual(["end_block", "has_more", "next_offset", "start_block"]);
	expect(Array.isArray(env.items), path).toBe(true);
	return env;
}

async function status(path: string): Promise<{ status: number; code: unknown }> {
	const r = await f.get(path);
	return { status: r.status, code: r.body.code };
}

/** Ids are well-formed, unique and strictly ascending (or descending). */
function expectIdsOrdered(items: Item[], order: "asc" | "desc" = "asc") {
	const ids = items.map((i) => i.id as string);
	for (const id of ids) expect(id).toMatch(ID);
	const sorted = [...ids].sort();
	expect(ids).toEqual(order === "asc" ? sorted : sorted.reverse());
	expect(new Set(ids).size).toBe(ids.length);
}

const assetOf = (t: ExpectedTransfer) => (t.kind === "native" ? "native" : t.kind === "erc20" ? "ft" : "nft");
const TRANSFER_KEYS = [
	"tx_hash",
	"block_number",
	"block_hash",
	"timestamp",
	"origin",
	"contract",
	"sender",
	"recipient",
	"value",
	"token_id",
	"asset_type",
	"token_standard",
];

/** A workload transfer as the API must show it (api-contract.md §6). */
function transferItem(t: ExpectedTransfer): Item {
	const block = blockAt(t.blockNumber);
	return {
		tx_hash: t.txHash,
		block_number: t.blockNumber,
		block_hash: block.hash,
		timestamp: Number(block.timestamp),
		origin: txOf(t.txHash).from,
		contract: t.contract,
		sender: t.from,
		recipient: t.to,
		value: t.values ?? t.value,
		token_id: t.tokenIds ?? t.tokenId,
		asset_type: assetOf(t),
		token_standard: t.kind,
	};
}

interface TransferQuery {
	assets?: Asset[];
	direction?: "incoming" | "outgoing";
	counterparty?: Address;
	origin?: Address;
	contracts?: Address[];
	from?: number;
	to?: number;
}

/** The workload's transfers bound to `a` that a query with `q` must return, in chain order. */
function expectedTransfers(a: Address, q: TransferQuery = {}): Item[] {
	const assets = q.assets ?? ["ft"];
	const ofAsset = (t: ExpectedTransfer) =>
		assets.some((x) =>
			x === "native"
				? t.kind === "native"
				: x === "ft"
					? t.kind === "erc20"
					: x === "nft"
						? t.kind === "erc721" || t.kind === "erc1155"
						: t.kind === "erc1155",
		);
	return w()
		.expected.transfers.filter((t) => {
			if (
				q.direction === "incoming" ? t.to !== a : q.direction === "outgoing" ? t.from !== a : t.to !== a && t.from !== a
			)
				return false;
			if (q.counterparty) {
				const cp = q.counterparty;
				const ok =
					q.direction === "incoming"
						? t.from === cp
						: q.direction === "outgoing"
							? t.to === cp
							: (t.from === a && t.to === cp) || (t.to === a && t.from === cp);
				if (!ok) return false;
			}
			if (q.origin && txOf(t.txHash).from !== q.origin) return false;
			if (q.contracts && (t.contract === null || !q.contracts.includes(t.contract))) return false;
			if (q.from !== undefined && t.blockNumber < q.from) return false;
			if (q.to !== undefined && t.blockNumber > q.to) return false;
			return ofAsset(t);
		})
		.map(transferItem);
}

async function transfers(a: Address, query = ""): Promise<Envelope> {
	const env = await list(`${v1}/address/${a}/transfers?limit=1000${query ? `&${query}` : ""}`);
	expectIdsOrdered(env.items);
	return env;
}

const projectTransfers = (env: Envelope) => env.items.map((i) => pick(i, TRANSFER_KEYS));

/** The receipt's log as the API's log record (api-contract.md §6). */
function logItem(l: Log): Item {
	const topics = l.topics as Hex[];
	return {
		tx_hash: l.transactionHash,
		block_hash: l.blockHash,
		block_number: Number(l.blockNumber),
		contract: l.address.toLowerCase(),
		op_code: `LOG${topics.length}`,
		topic_0: topics[0] ?? null,
		topic_1: topics[1] ?? null,
		topic_2: topics[2] ?? null,
		topic_3: topics[3] ?? null,
		log_data: l.data,
		log_index: l.logIndex,
	};
}
const LOG_KEYS = [
	"tx_hash",
	"block_hash",
	"block_number",
	"contract",
	"op_code",
	"topic_0",
	"topic_1",
	"topic_2",
	"topic_3",
	"log_data",
	"log_index",
];

function expectLogsMatchReceipt(logs: Item[], hash: string) {
	const r = receiptOf(hash);
	expect(logs.map((l) => pick(l, LOG_KEYS))).toEqual(r.logs.map(logItem));
	for (const l of logs) {
		expect(l.origin).toBe(txOf(hash).from);
		expect(l.timestamp).toBe(Number(blockAt(Number(r.blockNumber)).timestamp));
		// Log ordinal = block-wide log index (src/extract/ids.ts).
		expect(l.id).toBe(
			`${r.blockNumber.toString(16).padStart(16, "0")}-${r.transactionIndex.toString(16).padStart(4, "0")}-${(l.log_index as number).toString(16).padStart(8, "0")}`,
		);
	}
}

/** A workload transaction as /txs/{hash} and /address/{a}/txs must show it. */
function txItem(t: WorkloadTx): Item {
	const r = receiptOf(t.hash);
	const block = blockAt(t.blockNumber);
	const cumulative = Number(r.cumulativeGasUsed);
	const gasUsed = Number(r.gasUsed);
	return {
		hash: t.hash,
		block_hash: block.hash,
		block_number: t.blockNumber,
		block_timestamp: Number(block.timestamp),
		index: t.transactionIndex,
		gas_range: [cumulative - gasUsed, cumulative],
		data: {
			origin: t.from,
			to: t.to,
			value: t.value,
			status: t.status === "success",
			contract_address: t.contractAddress ?? undefined,
			gas_used: gasUsed,
			fee: (r.gasUsed * r.effectiveGasPrice).toString(),
			gas_price: r.effectiveGasPrice.toString(),
		},
	};
}
const TX_KEYS = ["hash", "block_hash", "block_number", "block_timestamp", "index", "gas_range"];
const TX_DATA_KEYS = ["origin", "to", "value", "status", "contract_address", "gas_used", "fee", "gas_price"];
const projectTx = (i: Item) => ({ ...pick(i, TX_KEYS), data: pick(i.data as Item, TX_DATA_KEYS) });

/** The node's block as the API's block record. */
function blockItem(b: Block): Item {
	return {
		hash: b.hash,
		parent_hash: b.parentHash,
		number: Number(b.number),
		timestamp: Number(b.timestamp),
		header: {
			nonce: Number(BigInt(b.nonce ?? "0x0")),
			gas_used: Number(b.gasUsed),
			mix_hash: b.mixHash,
			gas_limit: Number(b.gasLimit),
			difficulty: Number(b.difficulty),
			extra_data: b.extraData,
			logs_bloom: b.logsBloom,
			state_root: b.stateRoot,
			sha3_uncles: b.sha3Uncles,
			receipts_root: b.receiptsRoot,
			total_difficulty: b.totalDifficulty == null ? null : Number(b.totalDifficulty),
			transactions_root: b.transactionsRoot,
		},
		ghost: false,
		miner: b.miner.toLowerCase(),
		base_fee_per_gas: b.baseFeePerGas == null ? null : b.baseFeePerGas.toString(),
		size: Number(b.size),
		transaction_count: b.transactions.length,
	};
}
function expectBlock(item: Item | undefined, b: Block) {
	const expected = blockItem(b);
	const got = { ...pick(item ?? {}, Object.keys(expected)) };
	if (b.totalDifficulty == null) (got.header as Item).total_difficulty = null;
	expect(got).toEqual(expected);
}
const blockNumbersOf = (env: Envelope) => env.items.map((b) => b.number as number);
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

// ---------------------------------------------------------------------------------------------

describe("GET /address/{a}/transfers", () => {
	it("answers only ERC-20 transfers when asset_type is absent", async () => {
		for (const a of Object.values(w().accounts)) {
			const env = await transfers(a);
			expect(projectTransfers(env), a).toEqual(expectedTransfers(a));
			expect(env.range).toEqual({ has_more: false, start_block: 0, end_block: head, next_offset: null });
		}
		// Alice has ERC-20, ERC-721, ERC-1155 and native transfers, but only her one ERC-20 receipt shows.
		expect((await transfers(w().accounts.alice)).items.map((i) => i.token_standard)).toEqual(["erc20"]);
	});

	it.each([["native"], ["ft"], ["nft"], ["multi"]] as const)(
		"asset_type=%s alone answers exactly that kind, for every account",
		async (asset) => {
			for (const a of Object.values(w().accounts)) {
				const env = await transfers(a, `asset_type=${asset}`);
				expect(projectTransfers(env), a).toEqual(expectedTransfers(a, { assets: [asset] }));
			}
		},
	);

	it("asset_type lists combine kinds", async () => {
		for (const combo of [
			["native", "ft", "nft"],
			["native", "multi"],
			["ft", "nft"],
			["ft", "multi"],
		] as Asset[][]) {
			for (const a of Object.values(w().accounts)) {
				const env = await transfers(a, `asset_type=${combo.join(",")}`);
				expect(projectTransfers(env), `${a} ${combo}`).toEqual(expectedTransfers(a, { assets: combo }));
			}
		}
	});

	it("native transfers include internal calls, creates and self-destructs, and nothing reverted", async () => {
		const { alice, bob, carol, dave } = w().accounts;
		const c = w().contracts;
		const native = async (a: Address) => (await transfers(a, "asset_type=native")).items;
		// The factory forwards alice's value into the CREATE child: an internal create transfer.
		expect((await native(c.createChild)).map((i) => pick(i, ["sender", "recipient", "value"]))).toEqual([
			{ sender: c.factory, recipient: c.createChild, value: "250000000000000000" },
		]);
		// Dave gets the self-destructed balance and half of carol's split.
		const daveNative = await native(dave);
		expect(daveNative.map((i) => pick(i, ["sender", "value"]))).toEqual([
			{ sender: c.selfDestructor, value: "3000000000000000000" },
			{ sender: c.forwarder, value: "150000000000000000" },
		]);
		// Bob: only the split; the reverted tx's and the reverted inner frame's calls to bob are absent.
		const bobNative = await native(bob);
		expect(bobNative.map((i) => i.tx_hash)).toEqual(
			w()
				.expected.transfers.filter((t) => t.kind === "native" && t.to === bob)
				.map((t) => t.txHash),
		);
		const reverted = [w().expected.revertedTxHash, w().expected.innerRevertTxHash];
		expect(bobNative.filter((i) => reverted.includes(i.tx_hash as Hex))).toEqual([]);
		// Alice's failed 1 ETH send to the Reverter is not a transfer; her 0.05 ETH tryBoom is.
		const aliceOut = await native(alice);
		expect(aliceOut.some((i) => i.tx_hash === w().expected.revertedTxHash)).toBe(false);
		expect(aliceOut.some((i) => i.tx_hash === w().expected.innerRevertTxHash)).toBe(true);
		expect((await native(carol)).length).toBeGreaterThan(0);
	});

	it("direction=incoming/outgoing select the recipient/sender side", async () => {
		for (const a of Object.values(w().accounts)) {
			for (const direction of ["incoming", "outgoing"] as const) {
				const env = await transfers(a, `asset_type=native,ft,nft&direction=${direction}`);
				expect(projectTransfers(env), `${a} ${direction}`).toEqual(
					expectedTransfers(a, { assets: ["native", "ft", "nft"], direction }),
				);
			}
		}
		// Mints come from the zero address: its outgoing ERC-20/721/1155 transfers are the mints.
		const zero = "0x0000000000000000000000000000000000000000" as Address;
		const mints = await transfers(zero, "asset_type=ft,nft&direction=outgoing");
		expect(projectTransfers(mints)).toEqual(expectedTransfers(zero, { assets: ["ft", "nft"], direction: "outgoing" }));
		// 1 ERC-20 + 2 ERC-721 + 3 ERC-1155 mints.
		expect(mints.items).toHaveLength(6);
	});

	it("counterparty selects the other side, with and without a direction", async () => {
		const { deployer, alice, bob, carol, dave } = w().accounts;
		const all: Asset[] = ["native", "ft", "nft"];
		for (const [a, cp] of [
			[alice, carol],
			[carol, alice],
			[alice, bob],
			[deployer, alice],
			[bob, dave],
		] as const) {
			for (const direction of [undefined, "incoming", "outgoing"] as const) {
				const env = await transfers(
					a,
					`asset_type=native,ft,nft&counterparty=${cp}${direction ? `&direction=${direction}` : ""}`,
				);
				expect(projectTransfers(env), `${a} ${cp} ${direction}`).toEqual(
					expectedTransfers(a, { assets: all, counterparty: cp, direction }),
				);
			}
		}
		// Alice <-> carol: ERC-20? no; ERC-721 id 1 to carol, the ERC-1155 batch to carol, forward 0.1 ETH to carol
		// is from the forwarder (not alice), so it is absent.
		const ac = await transfers(alice, `asset_type=native,ft,nft&counterparty=${carol}`);
		expect(ac.items.map((i) => i.token_standard)).toEqual(["erc721", "erc1155"]);
	});

	it("origin selects by transaction sender, not by transfer sender", async () => {
		const { deployer, alice, bob } = w().accounts;
		for (const [a, origin] of [
			[alice, deployer],
			[alice, alice],
			[bob, deployer],
			[bob, alice],
		] as const) {
			const env = await transfers(a, `asset_type=native,ft,nft&origin=${origin}`);
			expect(projectTransfers(env), `${a} ${origin}`).toEqual(
				expectedTransfers(a, { assets: ["native", "ft", "nft"], origin }),
			);
		}
		// The approved operator (deployer) moved bob's big ERC-721 to alice: origin deployer, sender bob.
		const op = await transfers(
			alice,
			`asset_type=nft&origin=${deployer}&direction=incoming&contract=${w().contracts.token721}`,
		);
		expect(op.items.map((i) => pick(i, ["sender", "origin", "token_id"]))).toEqual([
			{ sender: "0x0000000000000000000000000000000000000000", origin: deployer, token_id: "1" },
			{ sender: bob, origin: deployer, token_id: (2n ** 160n + 7n).toString() },
		]);
	});

	it("contract takes one address or a list", async () => {
		const { alice, dave } = w().accounts;
		const c = w().contracts;
		const all: Asset[] = ["native", "ft", "nft"];
		for (const [a, contracts] of [
			[alice, [c.token721]],
			[alice, [c.token721, c.token1155]],
			[alice, [c.token20, c.token1155]],
			[dave, [c.token20, c.token721, c.token1155]],
		] as const) {
			const env = await transfers(a, `asset_type=native,ft,nft&contract=${contracts.join(",")}`);
			expect(projectTransfers(env), `${a} ${contracts}`).toEqual(
				expectedTransfers(a, { assets: all, contracts: [...contracts] }),
			);
			expect(env.items.length).toBeGreaterThan(0);
		}
		// Upper-case hex is the same address.
		const upper = await transfers(alice, `asset_type=nft&contract=${c.token721.toUpperCase().replace("0X", "0x")}`);
		expect(projectTransfers(upper)).toEqual(expectedTransfers(alice, { assets: ["nft"], contracts: [c.token721] }));
	});

	it("combines filters", async () => {
		const { deployer, alice, carol } = w().accounts;
		const c = w().contracts;
		const q: TransferQuery = {
			assets: ["nft"],
			direction: "incoming",
			origin: deployer,
			contracts: [c.token1155],
		};
		const env = await transfers(alice, `asset_type=nft&direction=incoming&origin=${deployer}&contract=${c.token1155}`);
		expect(projectTransfers(env)).toEqual(expectedTransfers(alice, q));
		expect(env.items.map((i) => i.token_id)).toEqual(["1", "2", "3"]);

		const env2 = await transfers(
			alice,
			`asset_type=multi&direction=outgoing&counterparty=${carol}&contract=${c.token1155},${c.token721}&block_number_start=20&block_number_end=latest`,
		);
		expect(projectTransfers(env2)).toEqual(
			expectedTransfers(alice, {
				assets: ["multi"],
				direction: "outgoing",
				counterparty: carol,
				contracts: [c.token1155, c.token721],
				from: 20,
			}),
		);
		expect(env2.items).toHaveLength(1);
	});

	it("writes amounts above 2^128 exactly, and an ERC-1155 batch as value/token_id arrays", async () => {
		const { deployer, carol } = w().accounts;
		const ft = await transfers(deployer);
		const values = ft.items.map((i) => BigInt(i.value as string));
		expect(values).toContain(2n ** 255n + 1000n);
		expect(values).toContain(2n ** 200n + 12345n);
		expect(values).toContain(2n ** 128n + 1n);
		for (const i of ft.items) expect(typeof i.value).toBe("string");

		const batch = (await transfers(carol, "asset_type=multi")).items;
		expect(batch).toHaveLength(1);
		expect(pick(batch[0] ?? {}, ["value", "token_id", "asset_type", "token_standard", "sender", "recipient"])).toEqual({
			value: ["5", (2n ** 130n + 1n).toString(), "3"],
			token_id: ["1", "2", "3"],
			asset_type: "nft",
			token_standard: "erc1155",
			sender: w().accounts.alice,
			recipient: carol,
		});
		// The big ERC-721 id and the big ERC-1155 mint keep every digit too.
		const nft = await transfers(w().accounts.alice, "asset_type=nft");
		expect(nft.items.map((i) => i.token_id)).toContain((2n ** 160n + 7n).toString());
		expect(nft.items.map((i) => i.value)).toContain((2n ** 200n + 5n).toString());
	});

	it("refuses contract with asset_type=native alone, and unknown asset types", async () => {
		const a = w().accounts.alice;
		expect(await status(`${v1}/address/${a}/transfers?asset_type=native&contract=${w().contracts.token20}`)).toEqual({
			status: 400,
			code: "INVALID_PARAMETER",
		});
		expect((await status(`${v1}/address/${a}/transfers?asset_type=erc20`)).status).toBe(400);
		expect((await status(`${v1}/address/${a}/transfers?direction=both`)).status).toBe(400);
		// At most 20 values per list (api-contract.md §5).
		const many = (n: number) => Array.from({ length: n }, () => w().contracts.token20).join(",");
		expect((await status(`${v1}/address/${a}/transfers?contract=${many(20)}`)).status).toBe(200);
		expect((await status(`${v1}/address/${a}/transfers?contract=${many(21)}`)).status).toBe(400);
	});
});

describe("ranges (api-contract.md §4), on /address/{a}/transfers", () => {
	const all = "asset_type=native,ft,nft";
	const a = () => w().accounts.alice;
	const check = async (query: string, start: number, end: number) => {
		const env = await transfers(a(), `${all}&${query}`);
		expect(env.range, query).toEqual({ has_more: false, start_block: start, end_block: end, next_offset: null });
		expect(projectTransfers(env), query).toEqual(
			expectedTransfers(a(), { assets: ["native", "ft", "nft"], from: start, to: end }),
		);
		return env;
	};

	it("block numbers", async () => {
		expect((await check("block_number_start=15&block_number_end=24", 15, 24)).items.length).toBeGreaterThan(3);
		await check("block_number_start=0&block_number_end=0", 0, 0);
		await check("block_number_start=1&block_number_end=1000000", 1, head);
	});

	it("latest, and negative numbers on either end (latest - N)", async () => {
		await check("block_number_start=20&block_number_end=latest", 20, head);
		await check(`block_number_start=-${head - 20}&block_number_end=latest`, 20, head);
		await check(`block_number_start=0&block_number_end=-${head - 19}`, 0, 19);
		await check(`block_number_start=-${head - 15}&block_number_end=-${head - 24}`, 15, 24);
		await check("block_number_start=latest&block_number_end=latest", head, head);
	});

	it("timestamps select the blocks whose timestamp is in the window", async () => {
		const ts = (n: number) => Number(blockAt(n).timestamp);
		const inWindow = (from: number, to: number) =>
			nodeBlocks.filter((b) => Number(b.timestamp) >= from && Number(b.timestamp) <= to).map((b) => Number(b.number));
		for (const [from, to] of [
			[ts(15), ts(24)],
			[ts(0), ts(head)],
			[ts(1), ts(1)],
			[ts(0), ts(0)],
		] as const) {
			const blocks = inWindow(from, to);
			await check(`timestamp_start=${from}&timestamp_end=${to}`, Math.min(...blocks), Math.max(...blocks));
		}
		// A window before genesis holds no block: no items.
		const before = await transfers(a(), `${all}&timestamp_start=${ts(0) - 100}&timestamp_end=${ts(0) - 1}`);
		expect(before.items).toEqual([]);
		expect(before.range.has_more).toBe(false);
	});

	it("block_hash is that one block", async () => {
		const batchBlock = w().txs.find((t) => t.label === "erc1155 batch")?.blockNumber ?? -1;
		const env = await check(`block_hash=${blockAt(batchBlock).hash}`, batchBlock, batchBlock);
		expect(env.items).toHaveLength(1);
		expect(Array.isArray(env.items[0]?.value)).toBe(true);
		expect(await status(`${v1}/address/${a()}/transfers?block_hash=0x${"ab".repeat(32)}`)).toEqual({
			status: 404,
			code: "BLOCK_NOT_FOUND",
		});
	});

	it("no range is the whole history", async () => {
		const env = await transfers(a(), all);
		expect(env.range).toEqual({ has_more: false, start_block: 0, end_block: head, next_offset: null });
		expect(projectTransfers(env)).toEqual(expectedTransfers(a(), { assets: ["native", "ft", "nft"] }));
	});

	it("order=desc gives the same items in reverse", async () => {
		const asc = await transfers(a(), `${all}&block_number_start=0&block_number_end=latest`);
		const desc = await list(`${v1}/address/${a()}/transfers?limit=1000&${all}&order=desc`);
		expectIdsOrdered(desc.items, "desc");
		expect(desc.items).toEqual([...asc.items].reverse());
		expect(desc.range).toEqual(asc.range);
	});

	it("refuses bad ranges", async () => {
		const p = `${v1}/address/${a()}/transfers?`;
		expect(await status(`${p}block_number_start=9&block_number_end=5`)).toEqual({
			status: 400,
			code: "INVALID_RANGE",
		});
		expect((await status(`${p}block_number_start=5`)).status).toBe(400);
		expect((await status(`${p}timestamp_end=5`)).status).toBe(400);
		expect((await status(`${p}block_number_start=1&block_number_end=2&block_hash=${blockAt(1).hash}`)).status).toBe(
			400,
		);
		expect((await status(`${p}block_number_start=1&block_number_end=2&timestamp_start=1&timestamp_end=2`)).status).toBe(
			400,
		);
		for (const limit of ["0", "-1", "1001", "x"]) expect((await status(`${p}limit=${limit}`)).status, limit).toBe(400);
	});
});

describe("output formats carry the same items as JSON", () => {
	const path = () => `${v1}/address/${w().accounts.alice}/transfers?asset_type=native,ft,nft&limit=1000`;
	let json: Envelope;
	beforeAll(async () => {
		json = await list(path());
		// Arrays (the ERC-1155 batch), nulls and numbers above 2^53 are all in this list.
		expect(json.items.some((i) => Array.isArray(i.value))).toBe(true);
		expect(json.items.some((i) => i.contract === null)).toBe(true);
	});

	const pagingHeaders = (h: Record<string, unknown>) => {
		expect(h["x-has-more"]).toBe("false");
		expect(h["x-start-block"]).toBe("0");
		expect(h["x-end-block"]).toBe(String(head));
	};

	it("accept: application/json is the envelope", async () => {
		const r = await f.get(path(), { ...AUTH, accept: "application/json" });
		expect(r.body).toEqual(json);
	});

	it("format=ndjson and Accept: application/x-ndjson: one item per line", async () => {
		for (const [url, headers] of [
			[`${path()}&format=ndjson`, AUTH],
			[path(), { ...AUTH, accept: "application/x-ndjson" }],
		] as const) {
			const r = await f.get(url, headers);
			expect(r.status).toBe(200);
			expect(r.headers["content-type"]).toContain("application/x-ndjson");
			pagingHeaders(r.headers);
			const lines = r.raw.split("\n").filter((l) => l !== "");
			expect(lines.map((l) => JSON.parse(l))).toEqual(json.items);
		}
	});

	it("format=csv and Accept: text/csv: a header row, then one row per item", async () => {
		for (const [url, headers] of [
			[`${path()}&format=csv`, AUTH],
			[path(), { ...AUTH, accept: "text/csv" }],
		] as const) {
			const r = await f.get(url, headers);
			expect(r.status).toBe(200);
			expect(r.headers["content-type"]).toContain("text/csv");
			pagingHeaders(r.headers);
			const rows = parseCsv(r.raw);
			expect(rows).toHaveLength(json.items.length);
			const cell = (v: unknown) => (v == null ? "" : typeof v === "string" ? v : JSON.stringify(v));
			rows.forEach((row, k) => {
				const item = json.items[k] ?? {};
				expect(Object.keys(row).sort()).toEqual(Object.keys(item).sort());
				for (const key of Object.keys(item)) expect(row[key], `${k}.${key}`).toBe(cell(item[key]));
			});
		}
	});

	it("format=arrow and Accept: application/vnd.apache.arrow.stream: an Arrow IPC stream", async () => {
		for (const [url, accept] of [
			[path(), "application/vnd.apache.arrow.stream"],
			[`${path()}&format=arrow`, "*/*"],
		] as const) {
			const res = await f.app.inject({ method: "GET", url, headers: { ...AUTH, accept } });
			expect(res.statusCode).toBe(200);
			expect(res.headers["content-type"]).toContain("application/vnd.apache.arrow.stream");
			pagingHeaders(res.headers);
			const table = tableFromIPC(res.rawPayload);
			expect(table.numRows).toBe(json.items.length);
			expect(table.schema.fields.map((x) => x.name).sort()).toEqual(Object.keys(json.items[0] ?? {}).sort());
			json.items.forEach((item, k) => {
				expect(table.getChild("id")?.get(k)).toBe(item.id);
				expect(table.getChild("block_number")?.get(k)).toBe(BigInt(item.block_number as number));
				const v = item.value;
				expect(table.getChild("value")?.get(k)).toBe(v == null ? null : typeof v === "string" ? v : JSON.stringify(v));
				expect(table.getChild("contract")?.get(k)).toBe(item.contract);
			});
		}
	});
});

describe("GET /address/{a}/txs", () => {
	const expectedTxs = (a: Address, direction?: "incoming" | "outgoing", cp?: Address) =>
		allTxs
			.filter((t) => {
				const out = t.from === a && (!cp || t.to === cp);
				const inc = t.to === a && (!cp || t.from === cp);
				return direction === "outgoing" ? out : direction === "incoming" ? inc : out || inc;
			})
			.map(txItem);

	it("lists the transactions sent or received by the address, in chain order", async () => {
		for (const a of [...Object.values(w().accounts), w().contracts.token20, w().contracts.reverter, EXTRA_SENDER]) {
			const env = await list(`${v1}/address/${a}/txs?limit=1000`);
			expectIdsOrdered(env.items);
			expect(env.items.map(projectTx), a).toEqual(expectedTxs(a));
			expect(env.items.length, a).toBeGreaterThan(0);
			for (const i of env.items) expect(i).not.toHaveProperty("logs");
		}
	});

	it("direction=outgoing is from, incoming is to", async () => {
		for (const a of [...Object.values(w().accounts), w().contracts.token721]) {
			for (const direction of ["incoming", "outgoing"] as const) {
				const env = await list(`${v1}/address/${a}/txs?limit=1000&direction=${direction}`);
				expect(env.items.map(projectTx), `${a} ${direction}`).toEqual(expectedTxs(a, direction));
			}
		}
	});

	it("counterparty is the other side", async () => {
		const { deployer, alice, carol } = w().accounts;
		const c = w().contracts;
		for (const [a, cp, direction] of [
			[deployer, alice, undefined],
			[alice, deployer, undefined],
			[alice, deployer, "incoming"],
			[alice, deployer, "outgoing"],
			[alice, c.token721, "outgoing"],
			[c.forwarder, carol, "incoming"],
			[c.token20, deployer, undefined],
		] as const) {
			const env = await list(
				`${v1}/address/${a}/txs?limit=1000&counterparty=${cp}${direction ? `&direction=${direction}` : ""}`,
			);
			const expected = expectedTxs(a, direction, cp);
			expect(env.items.map(projectTx), `${a} ${cp} ${direction}`).toEqual(expected);
		}
		// deployer -> alice: exactly the plain 1.5 ETH transfer.
		const eth = await list(`${v1}/address/${deployer}/txs?counterparty=${alice}`);
		expect(eth.items.map((i) => (i.data as Item).value)).toEqual(["1500000000000000000"]);
	});

	it("include_logs=true adds each receipt's logs (LOG0..LOG4, topics, log_index); false leaves them out", async () => {
		const opCodes = new Set<string>();
		for (const a of [...Object.values(w().accounts), EXTRA_SENDER]) {
			const env = await list(`${v1}/address/${a}/txs?limit=1000&direction=outgoing&include_logs=true`);
			expect(env.items.map((i) => i.hash)).toEqual(expectedTxs(a, "outgoing").map((t) => t.hash));
			for (const item of env.items) {
				const logs = item.logs as Item[];
				expect(Array.isArray(logs), item.hash as string).toBe(true);
				expectLogsMatchReceipt(logs, item.hash as string);
				for (const l of logs) opCodes.add(l.op_code as string);
			}
			const without = await list(`${v1}/address/${a}/txs?limit=1000&direction=outgoing&include_logs=false`);
			expect(without.items.map((i) => i.hash)).toEqual(env.items.map((i) => i.hash));
			for (const i of without.items) expect(i).not.toHaveProperty("logs");
		}
		expect([...opCodes].sort()).toEqual(["LOG0", "LOG1", "LOG2", "LOG3", "LOG4"]);
		expect((await status(`${v1}/address/${EXTRA_SENDER}/txs?include_logs=yes`)).status).toBe(400);
	});
});

describe("GET /txs/{hash} and /txs/{hash}/logs", () => {
	it("answers every transaction with its receipt fields and logs", async () => {
		const node = createPublicClient({ transport: http(f.anvil.url) });
		for (const t of allTxs) {
			const r = await f.get(`${v1}/txs/${t.hash}`);
			expect(r.status, t.label).toBe(200);
			expect(projectTx(r.body), t.label).toEqual(txItem(t));
			expectLogsMatchReceipt(r.body.logs as Item[], t.hash);
			// The signed transaction as the node has it.
			const tx = await node.getTransaction({ hash: t.hash });
			const data = r.body.data as Item;
			expect(
				{
					nonce: data.nonce,
					input: data.input,
					tx_type: data.tx_type,
					gas_limit: data.gas_limit,
					gas_fee_cap: data.gas_fee_cap,
					gas_tip_cap: data.gas_tip_cap,
					sig_r: BigInt(data.sig_r as string),
					sig_s: BigInt(data.sig_s as string),
					sig_v: data.sig_v,
				},
				t.label,
			).toEqual({
				nonce: tx.nonce,
				input: tx.input,
				tx_type: Number(tx.typeHex),
				gas_limit: Number(tx.gas),
				gas_fee_cap: tx.maxFeePerGas?.toString(),
				gas_tip_cap: tx.maxPriorityFeePerGas?.toString(),
				sig_r: BigInt(tx.r),
				sig_s: BigInt(tx.s),
				sig_v: Number(tx.v),
			});
		}
	});

	it("shows the reverted transaction with status false and no logs", async () => {
		const hash = w().expected.revertedTxHash;
		const r = await f.get(`${v1}/txs/${hash}`);
		expect(r.status).toBe(200);
		expect((r.body.data as Item).status).toBe(false);
		expect((r.body.data as Item).value).toBe("1000000000000000000");
		expect(r.body.logs).toEqual([]);
		// The succeeding tx whose inner frame reverted is status true.
		const inner = await f.get(`${v1}/txs/${w().expected.innerRevertTxHash}`);
		expect((inner.body.data as Item).status).toBe(true);
	});

	it("the deploy transaction carries the created contract; an uppercase hash finds the same tx", async () => {
		const r = await f.get(`${v1}/txs/${log0Tx.hash.toUpperCase().replace("0X", "0x")}`);
		expect(r.status).toBe(200);
		expect((r.body.data as Item).contract_address).toBe(log0Tx.contractAddress);
		expect((r.body.data as Item).to).toBeNull();
	});

	it("404 for an unknown hash, 400 for a malformed one", async () => {
		expect(await status(`${v1}/txs/0x${"12".repeat(32)}`)).toEqual({ status: 404, code: "TX_NOT_FOUND" });
		expect((await status(`${v1}/txs/0x1234`)).status).toBe(400);
		expect(await status(`${v1}/txs/0x${"12".repeat(32)}/logs`)).toEqual({ status: 404, code: "TX_NOT_FOUND" });
	});

	it("/txs/{hash}/logs answers the transaction with the receipt's logs in order after its frames (as the official clients read it)", async () => {
		const hashes = [
			w().expected.oddLogTxHash,
			log0Tx.hash,
			...w()
				.txs.filter((t) => ["erc1155 batch", "erc721 big", "CREATE2", "erc20 approve"].includes(t.label))
				.map((t) => t.hash),
		];
		const logsOf = async (hash: string) => {
			const r = await f.get(`${v1}/txs/${hash}/logs`);
			expect(r.status, hash).toBe(200);
			expect(r.body.hash).toBe(hash);
			expect(r.body.block_number).toBe(txOf(hash).blockNumber);
			// The call frames come first (client-pattern.test.ts checks them), then the logs.
			return (r.body.logs as Record<string, unknown>[]).filter((l) => String(l.op_code).startsWith("LOG"));
		};
		for (const hash of hashes) {
			const logs = await logsOf(hash);
			expectLogsMatchReceipt(logs, hash);
			expect(logs.length, hash).toBeGreaterThan(0);
		}
		expect(await logsOf(w().expected.revertedTxHash)).toEqual([]);
		const odd = await logsOf(w().expected.oddLogTxHash);
		expect(odd.map((l) => l.op_code)).toEqual(["LOG1", "LOG2", "LOG3"]);
		expect(odd).toHaveLength(w().expected.oddLogCount);
	});
});

describe("blocks", () => {
	it("GET /blocks/latest is the node's head block", async () => {
		const r = await f.get(`${v1}/blocks/latest`);
		expect(r.status).toBe(200);
		expect(r.body.number).toBe(head);
		expectBlock(r.body, blockAt(head));
	});

	it("GET /blocks/{hash} answers every block as the node has it", async () => {
		for (const b of nodeBlocks) {
			const r = await f.get(`${v1}/blocks/${b.hash}`);
			expect(r.status, String(b.number)).toBe(200);
			expectBlock(r.body, b);
		}
		expect(await status(`${v1}/blocks/0x${"cd".repeat(32)}`)).toEqual({ status: 404, code: "BLOCK_NOT_FOUND" });
	});

	it("GET /blocks with each range form", async () => {
		const ts = (n: number) => Number(blockAt(n).timestamp);
		const inWindow = (from: number, to: number) =>
			nodeBlocks.filter((b) => Number(b.timestamp) >= from && Number(b.timestamp) <= to).map((b) => Number(b.number));
		const cases: [string, number[]][] = [
			["block_number_start=5&block_number_end=9", range(5, 9)],
			["block_number_start=0&block_number_end=0", [0]],
			["block_number_start=30&block_number_end=latest", range(30, head)],
			["block_number_start=-3&block_number_end=latest", range(head - 3, head)],
			["block_number_start=-10&block_number_end=-2", range(head - 10, head - 2)],
			[`block_number_start=3&block_number_end=-${head - 4}`, range(3, 4)],
			[`block_number_start=${head - 1}&block_number_end=99999`, [head - 1, head]],
			[`timestamp_start=${ts(0)}&timestamp_end=${ts(0)}`, inWindow(ts(0), ts(0))],
			[`timestamp_start=${ts(2)}&timestamp_end=${ts(head)}`, inWindow(ts(2), ts(head))],
			[`timestamp_start=${ts(0)}&timestamp_end=${ts(head) + 1000}`, range(0, head)],
			[`block_hash=${blockAt(9).hash}`, [9]],
		];
		for (const [query, numbers] of cases) {
			const env = await list(`${v1}/blocks?limit=1000&${query}`);
			expect(blockNumbersOf(env), query).toEqual(numbers);
			expect(env.range, query).toEqual({
				has_more: false,
				start_block: numbers[0],
				end_block: numbers[numbers.length - 1],
				next_offset: null,
			});
			for (const item of env.items) expectBlock(item, blockAt(item.number as number));
		}
		const empty = await list(`${v1}/blocks?timestamp_start=${ts(0) - 50}&timestamp_end=${ts(0) - 1}`);
		expect(empty.items).toEqual([]);
	});

	it("GET /blocks needs a range; order=desc reverses; limit pages with next_offset = block hash", async () => {
		expect(await status(`${v1}/blocks`)).toEqual({ status: 400, code: "RANGE_REQUIRED" });
		const asc = await list(`${v1}/blocks?block_number_start=0&block_number_end=latest&limit=1000`);
		const desc = await list(`${v1}/blocks?block_number_start=0&block_number_end=latest&limit=1000&order=desc`);
		expect(blockNumbersOf(asc)).toEqual(range(0, head));
		expect(desc.items).toEqual([...asc.items].reverse());
		const page = await list(`${v1}/blocks?block_number_start=0&block_number_end=latest&limit=5`);
		expect(page.range).toEqual({ has_more: true, start_block: 0, end_block: head, next_offset: blockAt(4).hash });
		const next = await list(
			`${v1}/blocks?block_number_start=0&block_number_end=latest&limit=5&offset=${page.range.next_offset}`,
		);
		expect(blockNumbersOf(next)).toEqual(range(5, 9));
		const descPage = await list(`${v1}/blocks?block_number_start=0&block_number_end=latest&limit=5&order=desc`);
		expect(blockNumbersOf(descPage)).toEqual(range(head - 4, head).reverse());
		const descNext = await list(
			`${v1}/blocks?block_number_start=0&block_number_end=latest&limit=5&order=desc&offset=${descPage.range.next_offset}`,
		);
		expect(blockNumbersOf(descNext)).toEqual(range(head - 9, head - 5).reverse());
	});
});

describe("GET /contracts/creates", () => {
	const KEYS = ["tx_hash", "block_number", "contract", "caller", "origin", "value", "op_code"];
	const creationItem = (c: ExpectedCreation) => ({
		tx_hash: c.txHash,
		block_number: c.blockNumber,
		contract: c.contract,
		caller: c.caller,
		origin: c.origin,
		value: c.value,
		op_code: c.opCode,
	});
	const creates = async (query: string) => {
		const env = await list(`${v1}/contracts/creates?limit=1000&${query}`);
		expectIdsOrdered(env.items);
		return env.items.map((i) => pick(i, KEYS));
	};
	const expected = (keep: (c: ExpectedCreation) => boolean) => allCreations.filter(keep).map(creationItem);

	it("caller (and its alias sender) = the EOA lists its top-level deploys", async () => {
		const { deployer } = w().accounts;
		const deploys = expected((c) => c.caller === deployer);
		expect(deploys).toHaveLength(8);
		expect(deploys.every((d) => d.op_code === "CREATE" && d.caller === d.origin)).toBe(true);
		expect(await creates(`caller=${deployer}`)).toEqual(deploys);
		expect(await creates(`sender=${deployer}`)).toEqual(deploys);
		expect(await creates(`caller=${deployer}&sender=${deployer}`)).toEqual(deploys);
		// The SelfDestructor was deployed with 3 ETH.
		expect((await creates(`contract=${w().contracts.selfDestructor}`))[0]?.value).toBe("3000000000000000000");
		expect(await creates(`caller=${EXTRA_SENDER}`)).toEqual(expected((c) => c.caller === EXTRA_SENDER));
	});

	it("caller = the factory lists its nested CREATE and CREATE2", async () => {
		const c = w().contracts;
		const nested = await creates(`caller=${c.factory}`);
		expect(nested).toEqual(expected((x) => x.caller === c.factory));
		expect(nested.map((n) => [n.contract, n.op_code, n.value])).toEqual([
			[c.createChild, "CREATE", "250000000000000000"],
			[c.create2Child, "CREATE2", "0"],
		]);
	});

	it("origin, contract lists and combined filters", async () => {
		const { alice, bob } = w().accounts;
		const c = w().contracts;
		expect(await creates(`origin=${alice}`)).toEqual(expected((x) => x.origin === alice));
		expect(await creates(`origin=${bob}`)).toEqual(expected((x) => x.origin === bob));
		expect(await creates(`contract=${c.create2Child}`)).toEqual(expected((x) => x.contract === c.create2Child));
		const two = [c.create2Child, c.token20];
		expect(await creates(`contract=${two.join(",")}`)).toEqual(expected((x) => two.includes(x.contract)));
		expect(await creates(`caller=${c.factory}&origin=${bob}`)).toEqual(
			expected((x) => x.caller === c.factory && x.origin === bob),
		);
		expect(await creates(`caller=${c.factory}&origin=${w().accounts.carol}`)).toEqual([]);
		expect(await creates(`caller=${w().accounts.deployer}&block_number_start=3&block_number_end=5`)).toEqual(
			expected((x) => x.caller === w().accounts.deployer && x.blockNumber >= 3 && x.blockNumber <= 5),
		);
	});

	it("needs origin, caller/sender or contract", async () => {
		expect(await status(`${v1}/contracts/creates`)).toEqual({ status: 400, code: "MISSING_FILTER" });
		expect(await status(`${v1}/contracts/creates?block_number_start=0&block_number_end=latest`)).toEqual({
			status: 400,
			code: "MISSING_FILTER",
		});
		const { alice, bob } = w().accounts;
		expect((await status(`${v1}/contracts/creates?caller=${alice}&sender=${bob}`)).status).toBe(400);
	});
});

describe("GET /contracts/self-destructs", () => {
	it("finds the self-destruct by contract, caller or origin, with beneficiary and value", async () => {
		const [sd] = w().expected.selfDestructs;
		if (!sd) throw new Error("workload has no self-destruct");
		const expected = {
			tx_hash: sd.txHash,
			block_number: sd.blockNumber,
			contract: sd.contract,
			caller: sd.caller,
			origin: txOf(sd.txHash).from,
			value: sd.value,
			op_code: "SELFDESTRUCT",
			beneficiary: sd.beneficiary,
		};
		for (const q of [`contract=${sd.contract}`, `caller=${sd.caller}`, `sender=${sd.caller}`, `origin=${sd.caller}`]) {
			const env = await list(`${v1}/contracts/self-destructs?${q}`);
			expect(
				env.items.map((i) => ({
					...pick(i, ["tx_hash", "block_number", "contract", "caller", "origin", "value", "op_code"]),
					beneficiary: (i.data as Item).beneficiary,
				})),
				q,
			).toEqual([expected]);
			expectIdsOrdered(env.items);
		}
		expect(expected.value).toBe("3000000000000000000");
		expect(expected.beneficiary).toBe(w().accounts.dave);
		const none = await list(`${v1}/contracts/self-destructs?caller=${w().accounts.deployer}`);
		expect(none.items).toEqual([]);
		const outside = await list(
			`${v1}/contracts/self-destructs?contract=${sd.contract}&block_number_start=0&block_number_end=${sd.blockNumber - 1}`,
		);
		expect(outside.items).toEqual([]);
		expect(await status(`${v1}/contracts/self-destructs`)).toEqual({ status: 400, code: "MISSING_FILTER" });
	});
});

describe("GET /contract/{token}/transfers", () => {
	it("lists every transfer of each token contract, ERC-1155 batch included", async () => {
		const c = w().contracts;
		for (const token of [c.token20, c.token721, c.token1155]) {
			const env = await list(`${v1}/contract/${token}/transfers?limit=1000`);
			expectIdsOrdered(env.items);
			const expected = w()
				.expected.transfers.filter((t) => t.contract === token)
				.map(transferItem);
			expect(projectTransfers(env), token).toEqual(expected);
			expect(expected.length).toBeGreaterThan(3);
		}
		const ranged = await list(`${v1}/contract/${c.token20}/transfers?block_number_start=11&block_number_end=14`);
		expect(projectTransfers(ranged)).toEqual(
			w()
				.expected.transfers.filter((t) => t.contract === c.token20 && t.blockNumber >= 11 && t.blockNumber <= 14)
				.map(transferItem),
		);
		// A contract that moved no tokens: empty.
		expect((await list(`${v1}/contract/${c.forwarder}/transfers`)).items).toEqual([]);
	});
});

describe("GET /events", () => {
	/** Every receipt log matching `keep`, in chain order. */
	const receiptLogs = (keep: (l: Log) => boolean) =>
		allTxs.flatMap((t) => receiptOf(t.hash).logs.filter(keep)).map(logItem);
	const events = async (query: string) => {
		const env = await list(`${v1}/events?limit=1000&${query}`);
		expectIdsOrdered(env.items);
		return env.items;
	};

	it("contract + topic_0 = Transfer: the token's Transfer logs, values as the workload sent them", async () => {
		const c = w().contracts;
		const logs = await events(`contract=${c.token20}&topic_0=${TRANSFER_TOPIC}`);
		expect(logs.map((l) => pick(l, LOG_KEYS))).toEqual(
			receiptLogs((l) => l.address.toLowerCase() === c.token20 && l.topics[0] === TRANSFER_TOPIC),
		);
		const erc20 = w().expected.transfers.filter((t) => t.kind === "erc20");
		expect(logs.map((l) => BigInt(l.log_data as string).toString())).toEqual(erc20.map((t) => t.value));
		expect(logs.map((l) => `0x${(l.topic_2 as string).slice(26)}`)).toEqual(erc20.map((t) => t.to));
		expect(logs.every((l) => l.op_code === "LOG3")).toBe(true);
	});

	it("a contract list, topic_0 alone, and origin", async () => {
		const c = w().contracts;
		const two = [c.token20, c.token721];
		const logs = await events(`contract=${two.join(",")}&topic_0=${TRANSFER_TOPIC}`);
		expect(logs.map((l) => pick(l, LOG_KEYS))).toEqual(
			receiptLogs((l) => two.includes(l.address.toLowerCase() as Address) && l.topics[0] === TRANSFER_TOPIC),
		);
		expect(new Set(logs.map((l) => l.op_code))).toEqual(new Set(["LOG3", "LOG4"]));
		// Transfer topic anywhere: the tokens' logs and the odd logger's three (the reverted ones never made a receipt).
		const byTopic = await events(`topic_0=${TRANSFER_TOPIC}`);
		expect(byTopic.map((l) => pick(l, LOG_KEYS))).toEqual(receiptLogs((l) => l.topics[0] === TRANSFER_TOPIC));
		expect(byTopic.filter((l) => l.contract === c.oddLogger)).toHaveLength(w().expected.oddLogCount);
		expect(byTopic.filter((l) => l.contract === c.reverter)).toEqual([]);
		const dave = w().accounts.dave;
		expect((await events(`origin=${dave}`)).map((l) => pick(l, LOG_KEYS))).toEqual(
			allTxs.filter((t) => t.from === dave).flatMap((t) => receiptOf(t.hash).logs.map(logItem)),
		);
		expect(await status(`${v1}/events`)).toEqual({ status: 400, code: "MISSING_FILTER" });
	});
});

describe("GET /calls", () => {
	const KEYS = ["tx_hash", "from", "to", "value", "status"];
	const calls = async (query: string) => {
		const env = await list(`${v1}/calls?limit=1000&${query}`);
		expectIdsOrdered(env.items);
		return env.items;
	};

	it("to = the forwarder: its deploy and the forward/split calls with their value", async () => {
		const fw = w().contracts.forwarder;
		const items = await calls(`to=${fw}`);
		const expected = w()
			.txs.filter((t) => t.to === fw || t.contractAddress === fw)
			.map((t) => ({ tx_hash: t.hash, from: t.from, to: fw, value: t.value, status: true }));
		expect(items.map((i) => pick(i, KEYS))).toEqual(expected);
		expect(items.map((i) => i.trace_address)).toEqual(expected.map(() => []));
	});

	it("from = the forwarder: the internal value calls, as the workload recorded them", async () => {
		const fw = w().contracts.forwarder;
		const items = await calls(`from=${fw}`);
		const expected = w()
			.expected.transfers.filter((t) => t.via === "call" && t.from === fw)
			.map((t) => ({ tx_hash: t.txHash, from: fw, to: t.to, value: t.value, status: true }));
		expect(expected).toHaveLength(3);
		expect(items.map((i) => pick(i, KEYS))).toEqual(expected);
		for (const i of items) expect((i.trace_address as number[]).length).toBeGreaterThan(0);
		expect(items.map((i) => i.origin)).toEqual(expected.map((e) => txOf(e.tx_hash).from));
		expect(await calls(`from=${fw}&to=${w().accounts.carol}&call_type=call`)).toHaveLength(
			expected.filter((e) => e.to === w().accounts.carol).length,
		);
	});

	it("the reverted value calls to bob are frames with status false", async () => {
		const { alice, bob } = w().accounts;
		const items = await calls(`to=${bob}&origin=${alice}`);
		const byTx = (hash: string) => items.filter((i) => i.tx_hash === hash);
		for (const hash of [w().expected.revertedTxHash, w().expected.innerRevertTxHash]) {
			const frames = byTx(hash);
			expect(frames.length, hash).toBeGreaterThan(0);
			expect(frames.every((i) => i.status === false)).toBe(true);
		}
		expect(await status(`${v1}/calls`)).toEqual({ status: 400, code: "MISSING_FILTER" });
	});
});

describe("chains and auth", () => {
	it("404 for a chain without data, 400 for a malformed chain id, 401 without a key", async () => {
		const a = w().accounts.alice;
		const r = await f.get(`/eip155-999/v1/address/${a}/transfers`);
		expect(r.status).toBe(404);
		expect(r.body.code).toBe("CHAIN_NOT_FOUND");
		expect(String(r.body.message)).toContain("eip155-999");
		expect((await f.get(`/ethereum/v1/address/${a}/transfers`)).status).toBe(400);
		const anon = await f.get(`${v1}/blocks/latest`, {});
		expect(anon.status).toBe(401);
		expect(anon.headers["www-authenticate"]).toMatch(/^Bearer/);
	});
});
