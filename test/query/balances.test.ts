import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { encodeDeployData, encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { tokenBalances } from "../../src/query/balances.js";
import { deltaSums, TooManyChangesError } from "../../src/query/deltas.js";
import { type HolderCursor, tokenHolders, ZERO_ADDRESS } from "../../src/query/holders.js";
import { createStore } from "../../src/query/store/create-store.js";
import { isQuiet } from "../../src/query/store/key-filters.js";
import type { Store } from "../../src/query/store/store.js";
import { amountOf, LIMB_DIGITS, LIMBS, withDecimals } from "../../src/store/format/amounts.js";
import { manifestPath } from "../../src/store/format/layout.js";
import type { Manifest } from "../../src/store/format/records.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { compileContracts } from "../../src/workload/compile.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto, copyWithoutHeadDeltas, openViews } from "../helpers/anvil-chain.js";
import { nodeCall, receiptBlock, sendMined } from "../helpers/node-rpc.js";

/**
 * ERC-20 balances from the lake (src/query/balances.ts over the erc20_balances index) against the
 * node's own `balanceOf`, by eth_call at the head and at past blocks: the workload's token (whose
 * amounts pass 2^128 and 2^255, so no 128-bit or floating-point sum survives) plus transfers
 * between a few holders over many blocks, backfilled in 2-block partitions (so that the deltas
 * merge into runs and a past block falls inside a run) and in one partition.
 */
const CHAIN = 31337;
const ERC20 = parseAbi([
	"function balanceOf(address) view returns (uint256)",
	"function transfer(address, uint256) returns (bool)",
	"function mint(address, uint256)",
	"function totalSupply() view returns (uint256)",
]);
let anvil: AnvilInstance;
let root: string;
let token: string;
/** A second token, so a wallet holds several. */
let token2: string;
let holders: string[];
let wallets: string[];
const stores: Store[] = [];

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
// (A block before the token existed: no code, "0x": nothing held.)
const balanceOf = async (holder: string, block: number, of = token) =>
	BigInt(
		(
			(await rpc("eth_call", [
				{
					to: of,
					data: encodeFunctionData({ abi: ERC20, functionName: "balanceOf", args: [holder as `0x${string}`] }),
				},
				`0x${block.toString(16)}`,
			])) as string
		).replace(/^0x$/, "0x0"),
	);

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	const workload = await runWorkload({ rpcUrl: anvil.url });
	token = workload.contracts.token20.toLowerCase();
	const accounts = ((await rpc("eth_accounts")) as string[]).map((a) => a.toLowerCase());
	// The deployer and alice hold the big amounts: pass parts of them around, a block each.
	const [deployer, alice] = [workload.accounts.deployer, workload.accounts.alice].map((a) => a.toLowerCase());
	for (let i = 0; i < 30; i++) {
		const from = i % 3 === 0 ? (alice as string) : (deployer as string);
		const to = accounts[3 + (i % 4)] as string;
		const amount = 10n ** BigInt(20 + (i % 40)) + BigInt(i);
		await sendMined(anvil.url, {
			from,
			to: token,
			data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [to as `0x${string}`, amount] }),
		});
		if (i % 5 === 0) await rpc("anvil_mine", ["0x3"]);
	}
	// A second token: minted to three holders, passed on a little.
	const artifacts = await compileContracts();
	const t20 = artifacts.Token20 as { abi: readonly unknown[]; bytecode: `0x${string}` };
	const created = await nodeCall(anvil.url, "eth_sendTransaction", [
		{ from: deployer, data: encodeDeployData({ abi: t20.abi, bytecode: t20.bytecode, args: ["Second", "SEC"] }) },
	]);
	await receiptBlock(anvil.url, created);
	const receipt = (await rpc("eth_getTransactionReceipt", [created])) as { contractAddress: string };
	token2 = receipt.contractAddress.toLowerCase();
	for (const [i, to] of [accounts[3], accounts[4], deployer].entries()) {
		await sendMined(anvil.url, {
			from: deployer as string,
			to: token2,
			data: encodeFunctionData({
				abi: ERC20,
				functionName: "mint",
				args: [to as `0x${string}`, 5n * 10n ** 30n + BigInt(i)],
			}),
		});
	}
	await sendMined(anvil.url, {
		from: accounts[3] as string,
		to: token2,
		data: encodeFunctionData({
			abi: ERC20,
			functionName: "transfer",
			args: [accounts[5] as `0x${string}`, 10n ** 29n],
		}),
	});
	await rpc("anvil_mine", ["0x46"]);
	root = await mkdtemp(join(tmpdir(), "chainlake-balances-"));
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
	const views = await openViews(join(root, "whole"), CHAIN);
	try {
		holders = (
			await views.rows(
				"SELECT DISTINCT a FROM (SELECT sender AS a FROM transfers WHERE contract = $t UNION SELECT recipient FROM transfers WHERE contract = $t) ORDER BY a",
				{ t: token },
			)
		).map((r) => String(r.a));
		wallets = (
			await views.rows(
				"SELECT DISTINCT recipient AS a FROM transfers WHERE token_standard = 'erc20' AND recipient <> $z ORDER BY a",
				{ z: ZERO_ADDRESS },
			)
		).map((r) => String(r.a));
	} finally {
		views.close();
	}
}, 300_000);

afterAll(async () => {
	for (const s of stores) s.close();
	await anvil?.stop();
	if (!process.env.KEEP) await rm(root, { recursive: true, force: true });
});

describe("ERC-20 balances from the lake", () => {
	it("limbs put uint256 sums back together exactly, and decimals apply exactly", () => {
		const max = 2n ** 256n - 1n;
		const limbs = max
			.toString()
			.padStart(LIMBS.length * LIMB_DIGITS, "0")
			.match(new RegExp(`.{${LIMB_DIGITS}}`, "g"))
			?.reverse() as string[];
		expect(amountOf(limbs)).toBe(max);
		expect(amountOf(["-5", "1"])).toBe(10n ** BigInt(LIMB_DIGITS) - 5n);
		expect(withDecimals(1_500_000n, 6)).toBe("1.5");
		expect(withDecimals(1n, 6)).toBe("0.000001");
		expect(withDecimals(-42n * 10n ** 18n, 18)).toBe("-42");
	});

	it("every holder's balance equals balanceOf at the head and at past blocks, merged or not", async () => {
		const merged = await manifestOf(join(root, "merged"));
		expect((merged.runs ?? []).filter((r) => r.index === "erc20_balances").length).toBeGreaterThan(0);
		const head = Number(await rpc("eth_blockNumber"));
		const runs = (merged.runs ?? []).filter((r) => r.index === "erc20_balances");
		// Past blocks inside runs (so a run straddles them), and before the token existed.
		const past = [...runs.map((r) => Math.floor((r.from + r.to) / 2)), 1, head - 40];
		expect(holders.length).toBeGreaterThan(5);
		for (const dir of ["merged", "whole", "tail"]) {
			const store = await createStore(join(root, dir));
			stores.push(store);
			for (const block of [head, ...past]) {
				const db = store.snapshot(`eip155-${CHAIN}`);
				for (const holder of holders) {
					if (holder === "0x0000000000000000000000000000000000000000") continue;
					const ours = (await tokenBalances(db, holder, block)).find((b) => b.token === token);
					const want = await balanceOf(holder, block);
					expect(ours?.raw ?? 0n, `${dir}: ${holder} at ${block}`).toBe(want);
					if (ours) expect(ours.seenAt).toBeLessThanOrEqual(block);
				}
			}
		}
	}, 240_000);

	it("holdings changed on both sides of a past block are counted, and past the limit refused with TooManyChangesError", async () => {
		const merged = await manifestOf(join(root, "merged"));
		const runs = (merged.runs ?? []).filter((r) => r.index === "erc20_holders");
		const store = await createStore(join(root, "merged"));
		stores.push(store);
		const db = store.snapshot(`eip155-${CHAIN}`);
		// Every block inside a run: where some holding changed on both sides, a limit below their
		// count is refused, naming the count, and a limit of exactly their count sums them.
		let refused = 0;
		for (const r of runs)
			for (let n = r.from; n < r.to; n++) {
				const q = { kind: "erc20" as const, by: "token" as const, value: token, n };
				const err = await deltaSums(db, q, 0).then(
					() => null,
					(e: unknown) => e,
				);
				if (err === null) continue;
				expect(err).toBeInstanceOf(TooManyChangesError);
				const { count, message } = err as TooManyChangesError;
				expect(count).toBeGreaterThan(0);
				expect(message).toMatch(new RegExp(`^${count} balances changed on both sides of block ${n} `));
				await expect(deltaSums(db, q, count - 1)).rejects.toThrow(TooManyChangesError);
				await expect(deltaSums(db, q, count)).resolves.toBeDefined();
				refused++;
			}
		expect(refused).toBeGreaterThan(0);
	});

	it("a token's holders, paged by balance then address, equal balanceOf's at the head and at past blocks", async () => {
		const merged = await manifestOf(join(root, "merged"));
		const head = Number(await rpc("eth_blockNumber"));
		const runs = (merged.runs ?? []).filter((r) => r.index === "erc20_holders");
		expect(runs.length).toBeGreaterThan(0);
		const past = [...runs.map((r) => Math.floor((r.from + r.to) / 2)), head - 40];
		for (const dir of ["merged", "whole", "tail"]) {
			const store = await createStore(join(root, dir));
			stores.push(store);
			for (const block of [head, ...past]) {
				const want: [string, bigint][] = [];
				for (const h of holders) {
					if (h === ZERO_ADDRESS) continue;
					const b = await balanceOf(h, block);
					if (b !== 0n) want.push([h, b]);
				}
				want.sort((a, b) => (a[1] === b[1] ? (a[0] < b[0] ? -1 : 1) : a[1] > b[1] ? -1 : 1));
				// A quiet token's pages are summed from its transfer records (holders.ts quietHolders);
				// with its key spans hidden, from the balance indexes: both must be the node's.
				const db = store.snapshot(`eip155-${CHAIN}`);
				if (dir === "merged")
					expect(isQuiet(await db.keyRows("token_transfers", token, [0, block])), "the token is quiet").toBe(true);
				for (const [path, snap] of [
					["records", db],
					["balance indexes", { ...db, keyRows: async () => null }],
				] as const) {
					const got: [string, bigint][] = [];
					let after: HolderCursor | undefined;
					for (let pages = 0; pages < 50; pages++) {
						const page = await tokenHolders(snap, token, { limit: 2, after }, block);
						got.push(...page.holders.map((h): [string, bigint] => [h.address, h.raw]));
						if (!page.hasMore) break;
						after = page.next;
					}
					expect(got, `${dir} at ${block}, ${path}`).toEqual(want);
				}
			}
		}
	}, 240_000);

	describe("over HTTP, as the official client calls it", () => {
		const KEY = "balances-key";
		let app: FastifyInstance;
		/** The official client's request: Basic auth with the key as username, its paging parameters. */
		const get = (path: string) =>
			app.inject({
				url: `/balances/eip155-${CHAIN}/v1${path}`,
				headers: { authorization: `Basic ${Buffer.from(`${KEY}:`).toString("base64")}` },
			});
		/** The client's paging loop (parsiq.js HttpClient.query): limit and batchSize sent, next_offset fed back. */
		async function pageAll(path: string, batchSize: number): Promise<Record<string, unknown>[]> {
			const items: Record<string, unknown>[] = [];
			let offset: string | undefined;
			for (let pages = 0; pages < 100; pages++) {
				const sep = path.includes("?") ? "&" : "?";
				const r = await get(
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
			throw new Error(`more than 100 pages of ${path}`);
		}

		beforeAll(async () => {
			const store = await createStore(join(root, "merged"));
			stores.push(store);
			app = await buildApp({
				store,
				keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
				dataDir: join(root, "merged"),
			});
		});
		afterAll(async () => {
			await app?.close();
		});

		it("a wallet's tokens, a page at a time, equal balanceOf of each token", async () => {
			const head = Number(await rpc("eth_blockNumber"));
			expect(wallets.length).toBeGreaterThan(3);
			let several = 0;
			for (const w of wallets) {
				for (const block of [head, head - 80]) {
					const items = await pageAll(`/addresses/${w}/tokens?block_number=${block}`, 1);
					const want: [string, string][] = [];
					for (const t of [token, token2].sort()) {
						const b = await balanceOf(w, block, t);
						if (b !== 0n) want.push([t, b.toString()]);
					}
					expect(
						items.map((i) => [(i.token as { address: string }).address, i.value_raw]),
						`${w} at ${block}`,
					).toEqual(want);
					for (const i of items) expect(i.estimated_usd_value).toBeNull();
					if (items.length > 1) several++;
				}
			}
			expect(several).toBeGreaterThan(0);
		}, 120_000);

		it("a token's holders, a page at a time, and its supply equal balanceOf and totalSupply", async () => {
			const head = Number(await rpc("eth_blockNumber"));
			for (const t of [token, token2]) {
				const items = await pageAll(`/tokens/${t}/holders`, 2);
				const got = items.map((i) => [i.address, i.value_raw]);
				expect(new Set(got.map((g) => g[0])).size).toBe(got.length);
				for (const [h, v] of got) expect(v, `${t} ${h}`).toBe((await balanceOf(h as string, head, t)).toString());
				const values = got.map((g) => BigInt(g[1] as string));
				expect(values).toEqual([...values].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)));
				const info = await get(`/tokens/${t}`);
				expect(info.statusCode, info.body).toBe(200);
				const supply = BigInt(
					(await rpc("eth_call", [
						{ to: t, data: encodeFunctionData({ abi: ERC20, functionName: "totalSupply" }) },
						"latest",
					])) as string,
				);
				expect(info.json().total_supply_raw).toBe(supply.toString());
				expect(values.reduce((a, b) => a + b, 0n)).toBe(supply);
			}
		}, 120_000);

		it("bad input gets a 4xx saying what to fix; no key, a 401", async () => {
			const w = wallets[0] as string;
			const cases: [string, number, string][] = [
				[`/addresses/${w}/tokens?offset=zzz`, 400, "INVALID_OFFSET"],
				[`/tokens/${token}/holders?offset=1_2_3`, 400, "INVALID_OFFSET"],
				[`/addresses/${w}/tokens?block_number=99999999`, 400, "BLOCK_NOT_STORED"],
				[`/addresses/0x12/tokens`, 400, ""],
				[`/tokens/${token}?colour=red`, 400, ""],
			];
			for (const [path, status, code] of cases) {
				const r = await get(path);
				expect(r.statusCode, `${path}: ${r.body}`).toBe(status);
				if (code) expect(r.json().code).toBe(code);
				expect(r.json().message.length).toBeGreaterThan(10);
			}
			const anon = await app.inject({ url: `/balances/eip155-${CHAIN}/v1/addresses/${w}/tokens` });
			expect(anon.statusCode).toBe(401);
		});

		it("a folder without the history from block 0 answers 503 naming the blocks to backfill", async () => {
			const dir = join(root, "partial");
			await backfillInto(dir, anvil.url, CHAIN, { from: 20, partitionSize: 100_000, traces: "parity" });
			const store = await createStore(dir);
			stores.push(store);
			const partial = await buildApp({
				store,
				keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
				dataDir: dir,
			});
			try {
				const r = await partial.inject({
					url: `/balances/eip155-${CHAIN}/v1/tokens/${token}/holders`,
					headers: { authorization: `Bearer ${KEY}` },
				});
				expect(r.statusCode, r.body).toBe(503);
				expect(r.json().code).toBe("HISTORY_INCOMPLETE");
				expect(r.json().message).toContain("0..19");
			} finally {
				await partial.close();
			}
		}, 120_000);
	});
});

async function manifestOf(dir: string): Promise<Manifest> {
	return JSON.parse(await readFile(manifestPath(dir, `eip155-${CHAIN}`), "utf8")) as Manifest;
}
