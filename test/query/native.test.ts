import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { nativeBalance } from "../../src/query/balances.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { manifestPath } from "../../src/store/format/layout.js";
import type { Manifest } from "../../src/store/format/records.js";
import { generateActivity } from "../../src/workload/activity.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto, copyWithoutHeadDeltas, openViews } from "../helpers/anvil-chain.js";
import { nodeCall } from "../helpers/node-rpc.js";

/**
 * Native (ETH) balances from the lake against the node's `eth_getBalance`, at the head and at
 * past blocks, for every account and contract the chain touched: the workload (value sent to
 * contracts and forwarded by them, reverts that still pay gas, contract creations with value,
 * self-destructs) plus steady mixed activity, backfilled in 2-block partitions (merged runs;
 * genesis allocations of payers read as chunks settle) and in one partition (nothing settled: the
 * node's own funded accounts are read with block 0).
 */
const CHAIN = 31337;
const KEY = "native-key";
let anvil: AnvilInstance;
let root: string;
let addresses: string[];
const stores: Store[] = [];
let app: FastifyInstance;

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const balanceAt = async (a: string, block: number) =>
	BigInt((await rpc("eth_getBalance", [a, `0x${block.toString(16)}`])) as string);

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	const workload = await runWorkload({ rpcUrl: anvil.url });
	await generateActivity({ rpcUrl: anvil.url, contracts: workload.contracts, blocks: 12, txsPerBlock: 6 });
	await rpc("anvil_mine", ["0x46"]);
	root = await mkdtemp(join(tmpdir(), "chainlake-native-"));
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
		addresses = (
			await views.rows(
				`SELECT DISTINCT a FROM (SELECT sender AS a FROM transfers UNION SELECT recipient FROM transfers
				 UNION SELECT from_address FROM transactions UNION SELECT miner FROM blocks) WHERE a IS NOT NULL ORDER BY a`,
			)
		).map((r) => String(r.a));
	} finally {
		views.close();
	}
	const store = await createStore(join(root, "merged"));
	stores.push(store);
	app = await buildApp({
		store,
		keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
		dataDir: join(root, "merged"),
	});
}, 300_000);

afterAll(async () => {
	await app?.close();
	for (const s of stores) s.close();
	await anvil?.stop();
	if (!process.env.KEEP) await rm(root, { recursive: true, force: true });
});

describe("native balances from the lake", () => {
	it("every account's balance equals eth_getBalance at the head and at past blocks", async () => {
		const head = Number(await rpc("eth_blockNumber"));
		expect(addresses.length).toBeGreaterThan(15);
		// Read through merged runs of the index and the genesis allocations read as chunks settled.
		const m = JSON.parse(await readFile(manifestPath(join(root, "merged"), `eip155-${CHAIN}`), "utf8")) as Manifest;
		expect((m.runs ?? []).filter((r) => r.index === "native_balances").length).toBeGreaterThan(1);
		expect((m.metadata ?? []).reduce((n, e) => n + e.openings, 0)).toBeGreaterThan(5);
		const store = stores[0] as Store;
		for (const block of [head, head - 71, head - 76, 5]) {
			for (const a of addresses) {
				const ours = await nativeBalance(store.snapshot(`eip155-${CHAIN}`), a, block);
				expect(ours.raw, `${a} at ${block}`).toBe(await balanceAt(a, block));
			}
		}
	}, 240_000);

	it("with nothing settled yet, exact too (deltas derived, or summed from the datasets): the node's funded accounts are read with block 0", async () => {
		const head = Number(await rpc("eth_blockNumber"));
		for (const dir of ["whole", "tail"]) {
			const store = await createStore(join(root, dir));
			stores.push(store);
			let funded = 0;
			for (const a of addresses) {
				const ours = await nativeBalance(store.snapshot(`eip155-${CHAIN}`), a, head);
				expect(ours.raw, `${dir}: ${a}`).toBe(await balanceAt(a, head));
				if (ours.opening !== null && ours.opening > 0n) funded++;
			}
			expect(funded, dir).toBeGreaterThan(5);
		}
	});

	it("over HTTP: the balance in wei and in ether, the genesis allocation, 4xx for bad input", async () => {
		const get = (path: string) =>
			app.inject({
				url: `/balances/eip155-${CHAIN}/v1${path}`,
				headers: { authorization: `Basic ${Buffer.from(`${KEY}:`).toString("base64")}` },
			});
		const head = Number(await rpc("eth_blockNumber"));
		const [dev] = (await rpc("eth_accounts")) as string[];
		const a = (dev as string).toLowerCase();
		const r = await get(`/addresses/${a}/native?block_number=${head - 3}`);
		expect(r.statusCode, r.body).toBe(200);
		const body = r.json();
		expect(body.value_raw).toBe((await balanceAt(a, head - 3)).toString());
		expect(body.genesis_raw).toBe((await balanceAt(a, 0)).toString());
		expect(body.value_calculated).toMatch(/^\d+(\.\d+)?$/);
		expect(BigInt(body.value_calculated.split(".")[0])).toBe(BigInt(body.value_raw) / 10n ** 18n);
		const bad = await get(`/addresses/${a}/native?block_number=abc`);
		expect(bad.statusCode).toBe(400);
		expect((await get(`/addresses/${a}/native?block_number=${head + 5}`)).json().code ?? "").toBeDefined();
	});
});
