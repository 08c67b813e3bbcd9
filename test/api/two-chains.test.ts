/**
 * Two chains in ONE data folder, served by one app: every route answers from its own chain's files.
 *
 * Chain A (eip155-31337): the Solidity workload on anvil. Chain B (eip155-31338): a second anvil
 * with three plain ETH transfers sent through eth_sendTransaction from its unlocked dev accounts
 * (the same addresses as A's workload accounts), then a few empty blocks, so the two chains share
 * addresses but differ in heads, hashes, transactions and transfers. Both are backfilled (with
 * traces) into the same folder; the app is built as test/helpers/api.ts builds it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { type Address, type Block, createPublicClient, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { AUTH, TEST_KEY } from "../helpers/api.js";

type Item = Record<string, unknown>;
interface Envelope {
	range: { has_more: boolean; start_block: number; end_block: number; next_offset: string | null };
	items: Item[];
}

const A = 31337;
const B = 31338;
const CHAIN_A = `eip155-${A}`;
const CHAIN_B = `eip155-${B}`;
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const EMPTY_BLOCKS_ON_B = 5;

interface SentTx {
	hash: Hex;
	from: Address;
	to: Address;
	value: string;
	blockNumber: number;
}

let anvilA: AnvilInstance;
let anvilB: AnvilInstance;
let work: WorkloadResult;
let dataDir: string;
let store: Store;
let app: FastifyInstance;
const sentOnB: SentTx[] = [];
const heads: Record<string, Block> = {};

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
	[anvilA, anvilB] = await Promise.all([startAnvil({ chainId: A }), startAnvil({ chainId: B })]);
	work = await runWorkload({ rpcUrl: anvilA.url });

	const nodeB = createPublicClient({ transport: http(anvilB.url) });
	const { deployer, alice, bob, carol, dave } = work.accounts;
	for (const [from, to, value] of [
		[deployer, alice, 10n ** 18n],
		[bob, carol, 7n * 10n ** 17n],
		[alice, dave, 12345n],
	] as const) {
		const hash = await rpc<Hex>(anvilB.url, "eth_sendTransaction", [{ from, to, value: `0x${value.toString(16)}` }]);
		const r = await nodeB.waitForTransactionReceipt({ hash, pollingInterval: 25 });
		sentOnB.push({ hash, from, to, value: value.toString(), blockNumber: Number(r.blockNumber) });
	}
	await rpc(anvilB.url, "anvil_mine", [`0x${EMPTY_BLOCKS_ON_B.toString(16)}`]);

	dataDir = await mkdtemp(join(tmpdir(), "chainlake-two-chains-"));
	const a = await backfillInto(dataDir, anvilA.url, A, { partitionSize: 8 });
	const b = await backfillInto(dataDir, anvilB.url, B, { partitionSize: 8 });
	expect(a.summary.traceFormat).not.toBeNull();
	expect(b.summary.traceFormat).not.toBeNull();

	for (const [chain, url] of [
		[CHAIN_A, anvilA.url],
		[CHAIN_B, anvilB.url],
	] as const) {
		heads[chain] = await createPublicClient({ transport: http(url) }).getBlock({ blockTag: "latest" });
	}
	store = await createStore(dataDir);
	app = await buildApp({
		store,
		keyring: createKeyring({ path: join(dataDir, "_keys.json"), envKeys: [TEST_KEY] }),
		dataDir,
	});
});

afterAll(async () => {
	await app?.close();
	store?.close();
	await Promise.all([anvilA?.stop(), anvilB?.stop()]);
	if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function get(path: string) {
	const res = await app.inject({ method: "GET", url: path, headers: AUTH });
	return { status: res.statusCode, body: res.json() as Item };
}
async function list(path: string): Promise<Envelope> {
	const r = await get(path);
	expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
	return r.body as unknown as Envelope;
}
const headOf = (chain: string) => Number(heads[chain]?.number);
const pick = (o: Item, keys: string[]) => Object.fromEntries(keys.map((k) => [k, o[k]]));

describe("one data folder, two chains", () => {
	it("the chains differ as set up", () => {
		expect(headOf(CHAIN_A)).toBe(work.lastBlock);
		expect(headOf(CHAIN_B)).toBe(sentOnB.length + EMPTY_BLOCKS_ON_B);
		expect(headOf(CHAIN_A)).not.toBe(headOf(CHAIN_B));
	});

	it("/readyz lists both chains, each with its own head", async () => {
		const res = await app.inject({ method: "GET", url: "/readyz" });
		expect(res.statusCode).toBe(200);
		const body = res.json() as { ready: boolean; chains: Item[] };
		expect(body.ready).toBe(true);
		expect(body.chains.map((c) => pick(c, ["chain", "ready", "head_block"]))).toEqual([
			{ chain: CHAIN_A, ready: true, head_block: headOf(CHAIN_A) },
			{ chain: CHAIN_B, ready: true, head_block: headOf(CHAIN_B) },
		]);
	});

	it("/blocks/latest is each chain's own head block", async () => {
		for (const chain of [CHAIN_A, CHAIN_B]) {
			const r = await get(`/${chain}/v1/blocks/latest`);
			expect(r.status).toBe(200);
			expect(pick(r.body, ["number", "hash"]), chain).toEqual({
				number: headOf(chain),
				hash: heads[chain]?.hash,
			});
		}
	});

	it("a block hash of one chain is 404 on the other, as a path and as a range", async () => {
		const hashA = heads[CHAIN_A]?.hash;
		const hashB = heads[CHAIN_B]?.hash;
		expect((await get(`/${CHAIN_A}/v1/blocks/${hashA}`)).status).toBe(200);
		expect((await get(`/${CHAIN_B}/v1/blocks/${hashB}`)).status).toBe(200);
		expect((await get(`/${CHAIN_B}/v1/blocks/${hashA}`)).body).toMatchObject({
			statusCode: 404,
			code: "BLOCK_NOT_FOUND",
		});
		expect((await get(`/${CHAIN_A}/v1/blocks/${hashB}`)).body).toMatchObject({
			statusCode: 404,
			code: "BLOCK_NOT_FOUND",
		});
		const alice = work.accounts.alice;
		expect((await get(`/${CHAIN_B}/v1/address/${alice}/transfers?block_hash=${hashA}`)).status).toBe(404);
		expect((await get(`/${CHAIN_B}/v1/blocks?block_hash=${hashA}`)).status).toBe(404);
	});

	it("a transaction hash of one chain is 404 on the other", async () => {
		for (const t of work.txs) {
			expect((await get(`/${CHAIN_A}/v1/txs/${t.hash}`)).status, t.label).toBe(200);
			expect((await get(`/${CHAIN_B}/v1/txs/${t.hash}`)).body, t.label).toMatchObject({
				statusCode: 404,
				code: "TX_NOT_FOUND",
			});
		}
		for (const t of sentOnB) {
			const r = await get(`/${CHAIN_B}/v1/txs/${t.hash}`);
			expect(r.status).toBe(200);
			expect(pick(r.body, ["hash", "block_number"])).toEqual({ hash: t.hash, block_number: t.blockNumber });
			expect((r.body.data as Item).value).toBe(t.value);
			expect((await get(`/${CHAIN_A}/v1/txs/${t.hash}`)).status).toBe(404);
			expect((await get(`/${CHAIN_A}/v1/txs/${t.hash}/logs`)).status).toBe(404);
		}
	});

	it("ranges resolve against each chain's own head", async () => {
		for (const chain of [CHAIN_A, CHAIN_B]) {
			const env = await list(`/${chain}/v1/blocks?block_number_start=-2&block_number_end=latest`);
			const h = headOf(chain);
			expect(env.range, chain).toMatchObject({ start_block: h - 2, end_block: h });
			expect(env.items.map((b) => b.number)).toEqual([h - 2, h - 1, h]);
			const whole = await list(`/${chain}/v1/address/${work.accounts.alice}/transfers?asset_type=native`);
			expect(whole.range, chain).toMatchObject({ start_block: 0, end_block: h });
		}
		// Chain B ends long before A's workload blocks: a range there is clamped to B's head.
		const clamped = await list(
			`/${CHAIN_B}/v1/blocks?block_number_start=0&block_number_end=${headOf(CHAIN_A)}&limit=1000`,
		);
		expect(clamped.range.end_block).toBe(headOf(CHAIN_B));
		expect(clamped.items).toHaveLength(headOf(CHAIN_B) + 1);
	});

	it("transfers of the same address differ per chain", async () => {
		const KEYS = ["tx_hash", "sender", "recipient", "value", "asset_type"];
		for (const a of Object.values(work.accounts)) {
			const onA = await list(`/${CHAIN_A}/v1/address/${a}/transfers?asset_type=native,ft,nft&limit=1000`);
			expect(
				onA.items.map((i) => pick(i, KEYS)),
				`${a} on A`,
			).toEqual(
				work.expected.transfers
					.filter((t) => t.from === a || t.to === a)
					.map((t) => ({
						tx_hash: t.txHash,
						sender: t.from,
						recipient: t.to,
						value: t.values ?? t.value,
						asset_type: t.kind === "native" ? "native" : t.kind === "erc20" ? "ft" : "nft",
					})),
			);
			const onB = await list(`/${CHAIN_B}/v1/address/${a}/transfers?asset_type=native,ft,nft&limit=1000`);
			expect(
				onB.items.map((i) => pick(i, KEYS)),
				`${a} on B`,
			).toEqual(
				sentOnB
					.filter((t) => t.from === a || t.to === a)
					.map((t) => ({ tx_hash: t.hash, sender: t.from, recipient: t.to, value: t.value, asset_type: "native" })),
			);
		}
	});

	it("wallet transactions, token transfers and events differ per chain", async () => {
		const { deployer } = work.accounts;
		const txsB = await list(`/${CHAIN_B}/v1/address/${deployer}/txs?limit=1000`);
		expect(txsB.items.map((i) => i.hash)).toEqual(sentOnB.filter((t) => t.from === deployer).map((t) => t.hash));
		const txsA = await list(`/${CHAIN_A}/v1/address/${deployer}/txs?limit=1000`);
		expect(txsA.items.map((i) => i.hash)).toEqual(
			work.txs.filter((t) => t.from === deployer || t.to === deployer).map((t) => t.hash),
		);

		const token = work.contracts.token20;
		expect((await list(`/${CHAIN_A}/v1/contract/${token}/transfers`)).items.length).toBeGreaterThan(0);
		expect((await list(`/${CHAIN_B}/v1/contract/${token}/transfers`)).items).toEqual([]);
		expect((await list(`/${CHAIN_A}/v1/events?topic_0=${TRANSFER_TOPIC}`)).items.length).toBeGreaterThan(0);
		expect((await list(`/${CHAIN_B}/v1/events?topic_0=${TRANSFER_TOPIC}`)).items).toEqual([]);
	});

	it("contract creations and calls come from each chain's own traces", async () => {
		const { deployer } = work.accounts;
		const onA = await list(`/${CHAIN_A}/v1/contracts/creates?caller=${deployer}`);
		expect(onA.items.map((i) => i.contract)).toEqual(
			work.expected.creations.filter((c) => c.caller === deployer).map((c) => c.contract),
		);
		// B was exported with traces but created nothing: an empty list, not "traces unavailable".
		const onB = await get(`/${CHAIN_B}/v1/contracts/creates?caller=${deployer}`);
		expect(onB.status, JSON.stringify(onB.body)).toBe(200);
		expect((onB.body as unknown as Envelope).items).toEqual([]);
		const sdB = await get(`/${CHAIN_B}/v1/contracts/self-destructs?caller=${work.accounts.carol}`);
		expect(sdB.status, JSON.stringify(sdB.body)).toBe(200);
		expect((sdB.body as unknown as Envelope).items).toEqual([]);
		const callsB = await list(`/${CHAIN_B}/v1/calls?from=${deployer}`);
		expect(callsB.items.map((i) => pick(i, ["tx_hash", "to", "value"]))).toEqual(
			sentOnB.filter((t) => t.from === deployer).map((t) => ({ tx_hash: t.hash, to: t.to, value: t.value })),
		);
	});

	it("a chain id with no data is 404 and names the served chains", async () => {
		const r = await get(`/eip155-31339/v1/blocks/latest`);
		expect(r.status).toBe(404);
		expect(r.body.code).toBe("CHAIN_NOT_FOUND");
		expect(String(r.body.message)).toContain(CHAIN_A);
		expect(String(r.body.message)).toContain(CHAIN_B);
	});
});
