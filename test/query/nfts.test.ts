import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { withDecimals } from "../../src/store/format/amounts.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto, copyWithoutHeadDeltas } from "../helpers/anvil-chain.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * The NFT API and token metadata against the node itself: the workload's ERC-721 and ERC-1155
 * tokens (an id above 2^128, a TransferBatch, transfers between holders) plus more transfers over many
 * blocks and a burn, backfilled in 2-block partitions (merged runs, a past block inside one, and
 * the metadata read as chunks settle) and in one partition (no settled chunk: every balance from
 * the transfers themselves, no metadata). Every ERC-721 owner equals `ownerOf`, every ERC-1155
 * (holder, id) equals `balanceOf`, at the head and at past blocks, paged as the official client
 * pages (Basic auth, limit and batchSize, next_offset fed back).
 */
const CHAIN = 31337;
const KEY = "nft-key";
const NFT = parseAbi([
	"function ownerOf(uint256) view returns (address)",
	"function balanceOf(uint256, address) view returns (uint256)",
	"function transferFrom(address, address, uint256)",
	"function mint(address, uint256)",
	"function safeBatchTransferFrom(address, address, uint256[], uint256[], bytes)",
	"function name() view returns (string)",
	"function symbol() view returns (string)",
	"function decimals() view returns (uint8)",
]);
const ZERO = "0x0000000000000000000000000000000000000000";
let anvil: AnvilInstance;
let root: string;
let t721: string;
let t1155: string;
let t20: string;
let accounts: string[];
/** Every ERC-721 id and ERC-1155 id the chain moved. */
let ids721: bigint[];
let ids1155: bigint[];
const apps: Record<string, FastifyInstance> = {};
const stores: Store[] = [];

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const call = async (to: string, data: `0x${string}`, block: number) =>
	(await rpc("eth_call", [{ to, data }, `0x${block.toString(16)}`])) as string;
/**
 * The node's answers at a block, asked once: a mined block's state does not change (this chain
 * has no reorg), and the three folders are checked against the same answers.
 */
const asked = new Map<string, Promise<unknown>>();
const once = <T>(key: string, ask: () => Promise<T>): Promise<T> => {
	if (!asked.has(key)) asked.set(key, ask());
	return asked.get(key) as Promise<T>;
};
const ownerOf = (id: bigint, block: number): Promise<string | null> =>
	once(`ownerOf ${id} ${block}`, async () => {
		try {
			const out = await call(t721, encodeFunctionData({ abi: NFT, functionName: "ownerOf", args: [id] }), block);
			const owner = `0x${out.slice(-40)}`;
			return owner === ZERO || out === "0x" ? null : owner;
		} catch {
			return null;
		}
	});
const balanceOf1155 = (holder: string, id: bigint, block: number): Promise<bigint> =>
	once(`balanceOf ${holder} ${id} ${block}`, async () =>
		BigInt(
			(
				await call(
					t1155,
					encodeFunctionData({ abi: NFT, functionName: "balanceOf", args: [id, holder as `0x${string}`] }),
					block,
				)
			).replace(/^0x$/, "0x0"),
		),
	);

const get = (dir: string, path: string) =>
	(apps[dir] as FastifyInstance).inject({
		url: path,
		headers: { authorization: `Basic ${Buffer.from(`${KEY}:`).toString("base64")}` },
	});
/** The official client's paging loop (parsiq.js HttpClient.query). */
async function pageAll(dir: string, path: string, batchSize: number): Promise<Record<string, unknown>[]> {
	const items: Record<string, unknown>[] = [];
	let offset: string | undefined;
	for (let pages = 0; pages < 200; pages++) {
		const sep = path.includes("?") ? "&" : "?";
		const r = await get(
			dir,
			`${path}${sep}batchSize=${batchSize}&limit=${batchSize}${offset ? `&offset=${offset}` : ""}`,
		);
		expect(r.statusCode, r.body).toBe(200);
		const body = r.json() as {
			range: { has_more: boolean; next_offset: string | null };
			items: Record<string, unknown>[];
		};
		items.push(...body.items);
		if (!body.range.has_more) return items;
		offset = body.range.next_offset ?? undefined;
	}
	throw new Error(`more than 200 pages of ${path}`);
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	const workload = await runWorkload({ rpcUrl: anvil.url });
	t721 = workload.contracts.token721.toLowerCase();
	t1155 = workload.contracts.token1155.toLowerCase();
	t20 = workload.contracts.token20.toLowerCase();
	accounts = ((await rpc("eth_accounts")) as string[]).map((a) => a.toLowerCase());
	const send = (from: string, to: string, data: `0x${string}`) => sendMined(anvil.url, { from, to, data });
	// More ERC-721 tokens passed around over many blocks, one burnt; an ERC-1155 batch.
	for (let i = 0; i < 12; i++) {
		const id = 500n + BigInt(i % 4);
		const holder = accounts[(i % 4) + 2] as string;
		if (i < 4)
			await send(
				holder,
				t721,
				encodeFunctionData({ abi: NFT, functionName: "mint", args: [holder as `0x${string}`, id] }),
			);
		else {
			const owner = (await ownerOf(id, Number(await rpc("eth_blockNumber")))) as string;
			const to = i === 11 ? ZERO : (accounts[(i % 5) + 3] as string);
			await send(
				owner,
				t721,
				encodeFunctionData({
					abi: NFT,
					functionName: "transferFrom",
					args: [owner as `0x${string}`, to as `0x${string}`, id],
				}),
			);
		}
		if (i % 3 === 0) await rpc("anvil_mine", ["0x2"]);
	}
	const alice = workload.accounts.alice.toLowerCase();
	await send(
		alice,
		t1155,
		encodeFunctionData({
			abi: NFT,
			functionName: "safeBatchTransferFrom",
			args: [alice as `0x${string}`, accounts[6] as `0x${string}`, [2n, 3n], [1n, 2n], "0x"],
		}),
	);
	// Settle every block that moved a token (runs.ts SETTLE_DEPTH), so its metadata is read.
	await rpc("anvil_mine", ["0x46"]);
	root = await mkdtemp(join(tmpdir(), "chainlake-nfts-"));
	// Without the Delta Lake logs (--delta off): nothing here reads them, and writing them at each
	// of this backfill's hundred-odd manifest saves is about a third of its CPU.
	await backfillInto(join(root, "merged"), anvil.url, CHAIN, {
		partitionSize: 2,
		traces: "parity",
		lake: { delta: false },
	});
	await backfillInto(join(root, "whole"), anvil.url, CHAIN, { partitionSize: 100_000, traces: "parity" });
	// The same chain before its one chunk (not settled) has its balance deltas: summed from transfers.
	expect(await copyWithoutHeadDeltas(join(root, "whole"), join(root, "tail"), CHAIN)).toBe(1);
	for (const dir of ["merged", "whole", "tail"]) {
		const store = await createStore(join(root, dir));
		stores.push(store);
		apps[dir] = await buildApp({
			store,
			keyring: createKeyring({ path: join(root, `${dir}-keys.json`), envKeys: [KEY] }),
			dataDir: join(root, dir),
		});
	}
	// The ids moved, from the lake's own transfers (the node has no list of them).
	const transfers = await pageAll("whole", `/eip155-${CHAIN}/v1/contract/${t721}/transfers?asset_type=nft`, 1000);
	ids721 = [...new Set(transfers.map((t) => BigInt(t.token_id as string)))];
	const multi = await pageAll("whole", `/eip155-${CHAIN}/v1/contract/${t1155}/transfers?asset_type=nft`, 1000);
	ids1155 = [
		...new Set(
			multi.flatMap((t) => (Array.isArray(t.token_id) ? t.token_id : [t.token_id]).map((v) => BigInt(v as string))),
		),
	];
}, 300_000);

afterAll(async () => {
	for (const a of Object.values(apps)) await a.close();
	for (const s of stores) s.close();
	await anvil?.stop();
	if (!process.env.KEEP) await rm(root, { recursive: true, force: true });
});

describe("NFT API from the lake", () => {
	it("every ERC-721 token's owner equals ownerOf at the head and at past blocks, merged or not", async () => {
		const head = Number(await rpc("eth_blockNumber"));
		expect(ids721.length).toBeGreaterThan(5);
		expect(ids721.some((id) => id > 2n ** 128n)).toBe(true);
		for (const dir of ["merged", "whole", "tail"]) {
			for (const block of [head, head - 75, head - 80, head - 86]) {
				const items = await pageAll(dir, `/nft/eip155-${CHAIN}/v1/${t721}/owner?block_number=${block}`, 2);
				const got = new Map(items.map((i) => [BigInt(i.token_id as string), i.owner as string]));
				expect(got.size, `${dir} ${block}: no duplicates`).toBe(items.length);
				for (const id of ids721)
					expect(got.get(id) ?? null, `${dir} id ${id} at ${block}`).toBe(await ownerOf(id, block));
				for (const i of items) {
					const t = i.transfer as { to: string; block_number: number; tx_hash: string };
					expect(t.to).toBe(i.owner);
					expect(t.block_number).toBeLessThanOrEqual(block);
					expect(t.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
				}
			}
		}
	}, 240_000);

	it("every ERC-1155 (holder, id) and every inventory equal balanceOf and ownerOf, paged as the client pages", async () => {
		const head = Number(await rpc("eth_blockNumber"));
		expect(ids1155.length).toBeGreaterThan(2);
		for (const dir of ["merged", "whole", "tail"]) {
			for (const block of [head, head - 80]) {
				for (const holder of accounts) {
					const items = await pageAll(dir, `/nft/eip155-${CHAIN}/v1/${holder}/inventory?block_number=${block}`, 3);
					const keys = items.map((i) => i.id);
					expect(new Set(keys).size).toBe(keys.length);
					const want: string[] = [];
					for (const id of ids721) if ((await ownerOf(id, block)) === holder) want.push(`${t721}:${id}:1`);
					for (const id of ids1155) {
						const b = await balanceOf1155(holder, id, block);
						if (b > 0n) want.push(`${t1155}:${id}:${b}`);
					}
					const got = items.map((i) => `${(i.collection as { address: string }).address}:${i.token_id}:${i.amount}`);
					expect(got.sort(), `${dir} ${holder} at ${block}`).toEqual(want.sort());
					for (const i of items) expect((i.transfer as { tx_hash: string | null }).tx_hash).toMatch(/^0x/);
				}
			}
		}
	}, 240_000);

	it("metadata read from the node: names, decimals, decoded token URIs, supply", async () => {
		const text = async (to: string, fn: "name" | "symbol") => {
			const { decodeFunctionResult } = await import("viem");
			const out = await call(
				to,
				encodeFunctionData({ abi: NFT, functionName: fn }),
				Number(await rpc("eth_blockNumber")),
			);
			return decodeFunctionResult({ abi: NFT, functionName: fn, data: out as `0x${string}` });
		};
		const data = (await get("merged", `/nft/eip155-${CHAIN}/v1/${t721}/contract-data`)).json();
		expect(data).toMatchObject({
			address: t721,
			standard: "erc721",
			name: await text(t721, "name"),
			symbol: await text(t721, "symbol"),
		});
		const head = Number(await rpc("eth_blockNumber"));
		let owned = 0;
		for (const id of ids721) if (await ownerOf(id, head)) owned++;
		expect(data.total_supply).toBe(String(owned));
		// The ERC-20 token's name, symbol and decimals in the Balances API.
		const token = (await get("merged", `/balances/eip155-${CHAIN}/v1/tokens/${t20}`)).json();
		expect(token).toMatchObject({ name: await text(t20, "name"), symbol: await text(t20, "symbol"), decimals: 18 });
		expect(BigInt(token.total_supply_raw)).toBeGreaterThan(0n);
		expect(token.total_supply_calculated).toBe(withDecimals(BigInt(token.total_supply_raw), 18));
		// On-chain JSON, decoded; an ERC-1155 URI with its {id} filled in, not fetched.
		const id = ids721.find((i) => i === 500n) as bigint;
		const meta = (await get("merged", `/nft/eip155-${CHAIN}/v1/${t721}/${id}/metadata`)).json();
		expect(meta.metadata).toEqual({
			token_uri: `data:application/json,{"name":"WLT ${id}"}`,
			content: { name: `WLT ${id}` },
			is_json: true,
		});
		expect(meta.collection.name).toBe(await text(t721, "name"));
		const multi = (await get("merged", `/nft/eip155-${CHAIN}/v1/${t1155}/2/metadata`)).json();
		expect(multi.metadata).toEqual({
			token_uri: `https://tokens.example.invalid/${"2".padStart(64, "0")}.json`,
			content: null,
			is_json: false,
		});
		// The one-partition folder has no settled chunk yet: no metadata, nulls, never an error.
		const bare = await get("whole", `/balances/eip155-${CHAIN}/v1/tokens/${t20}`);
		expect(bare.statusCode).toBe(200);
		expect(bare.json()).toMatchObject({
			name: null,
			symbol: null,
			decimals: null,
			total_supply_raw: token.total_supply_raw,
		});
	});

	it("histories list every transfer of an id and of an address, a batch per id", async () => {
		const burnt = (await pageAll("merged", `/nft/eip155-${CHAIN}/v1/${t721}/503/history`, 2)) as {
			transfer: { from: string; to: string };
		}[];
		expect(burnt.length).toBeGreaterThanOrEqual(3);
		expect(burnt[0]?.transfer.from).toBe(ZERO);
		expect(burnt.at(-1)?.transfer.to).toBe(ZERO);
		for (let i = 1; i < burnt.length; i++) expect(burnt[i]?.transfer.from).toBe(burnt[i - 1]?.transfer.to);
		// A page at a time, one item each, it breaks inside the batch and resumes: the same items as one page.
		const six = await pageAll("merged", `/nft/eip155-${CHAIN}/v1/${accounts[6]}/history?contract=${t1155}`, 1);
		const whole = await pageAll("merged", `/nft/eip155-${CHAIN}/v1/${accounts[6]}/history?contract=${t1155}`, 1000);
		expect(six).toEqual(whole);
		const back = await pageAll(
			"merged",
			`/nft/eip155-${CHAIN}/v1/${accounts[6]}/history?contract=${t1155}&order=desc`,
			1,
		);
		// Rows newest first; a batch row's items still in their own order.
		const rows = new Map<string, string[]>();
		for (const i of whole) {
			const row = String(i.id).split(":")[0] as string;
			rows.set(row, [...(rows.get(row) ?? []), String(i.id)]);
		}
		expect(back.map((i) => i.id)).toEqual([...rows.values()].reverse().flat());
		const batch = six.filter((i) => String(i.id).includes(":"));
		expect(batch.map((i) => [i.token_id, i.amount])).toEqual([
			["2", "1"],
			["3", "2"],
		]);
	});

	it("bad input gets a 4xx saying what to fix", async () => {
		const cases: [string, number, string][] = [
			[`/nft/eip155-${CHAIN}/v1/${t721}/owner?offset=zzz`, 400, "INVALID_OFFSET"],
			[`/nft/eip155-${CHAIN}/v1/${t721}/12ab/metadata`, 400, "INVALID_PARAMETER"],
			[`/nft/eip155-${CHAIN}/v1/${t721}/999999/metadata`, 404, "TOKEN_NOT_FOUND"],
			[`/nft/eip155-${CHAIN}/v1/${accounts[9]}/contract-data`, 404, "COLLECTION_NOT_FOUND"],
			[`/nft/eip155-${CHAIN}/v1/${accounts[1]}/inventory?metadata=yes`, 400, "INVALID_PARAMETER"],
			[`/nft/eip155-${CHAIN}/v1/${accounts[1]}/inventory?block_number=99999999`, 400, "BLOCK_NOT_STORED"],
		];
		for (const [path, status, code] of cases) {
			const r = await get("merged", path);
			expect(r.statusCode, `${path}: ${r.body}`).toBe(status);
			expect(r.json().error ?? r.json().code, path).toBeDefined();
			expect(r.body, path).toContain(code);
		}
	});

	it("contract-data names each collection's standard, ERC-1155 too, with the metadata read or not", async () => {
		// Issue 27 saw an ERC-1155 collection as "unknown": contract-data took the standard from the
		// token metadata alone, which is read only once a chunk settles (never in "whole", one
		// unsettled chunk). Since 8d85303 it falls back on the collection's NFT transfers in the lake
		// (TransferSingle/TransferBatch rows are erc1155), so both layouts must say it.
		for (const dir of ["merged", "whole", "tail"])
			for (const [token, standard] of [
				[t1155, "erc1155"],
				[t721, "erc721"],
			] as const) {
				const r = await get(dir, `/nft/eip155-${CHAIN}/v1/${token}/contract-data`);
				expect(r.statusCode, `${dir}: ${r.body}`).toBe(200);
				expect(r.json().standard, `${dir} ${standard}`).toBe(standard);
			}
	});

	it("a token id past uint256 (2^256 and up) is a 400 on every route that takes one; 2^256 - 1 is a token id", async () => {
		// Issue 27: 2^256 (78 digits, as the largest uint256) answered 200 with an empty history.
		const over = (2n ** 256n).toString();
		const max = (2n ** 256n - 1n).toString();
		for (const path of [
			`/nft/eip155-${CHAIN}/v1/${t721}/${over}/metadata`,
			`/nft/eip155-${CHAIN}/v1/${t721}/${over}/history`,
			`/nft/eip155-${CHAIN}/v1/${t1155}/${"9".repeat(78)}/history`,
		]) {
			const r = await get("merged", path);
			expect(r.statusCode, `${path}: ${r.body}`).toBe(400);
			expect(r.json(), path).toMatchObject({ code: "INVALID_PARAMETER" });
			expect(r.json().message, path).toContain("token_id");
			expect(r.json().message, path).toContain("from 0 to 2^256 - 1");
		}
		// Offsets carry token ids too (inventory: contract_id, owner: id_holder).
		for (const path of [
			`/nft/eip155-${CHAIN}/v1/${accounts[1]}/inventory?offset=${t721}_${over}`,
			`/nft/eip155-${CHAIN}/v1/${t721}/owner?offset=${over}_${accounts[1]}`,
		]) {
			const r = await get("merged", path);
			expect(r.statusCode, `${path}: ${r.body}`).toBe(400);
			expect(r.json(), path).toMatchObject({ code: "INVALID_OFFSET" });
		}
		expect((await get("merged", `/nft/eip155-${CHAIN}/v1/${t721}/${max}/metadata`)).statusCode).toBe(404);
		expect((await get("merged", `/nft/eip155-${CHAIN}/v1/${t721}/${max}/history`)).statusCode).toBe(200);
		expect((await get("merged", `/nft/eip155-${CHAIN}/v1/${t721}/owner?offset=${max}_${accounts[1]}`)).statusCode).toBe(
			200,
		);
	});
});
