import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createFollower } from "../../src/follow/follower.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { nodeCall } from "../helpers/node-rpc.js";
import { openSse, type SseEvent } from "../helpers/sse.js";

/*
 * Streams on a real anvil node followed by the real follower, read over a real socket: from
 * block 0 through reorgs 1, 3 and 10 blocks deep and an A → B → A return, then across restarts
 * of the service (one with a reorg while it was down). A consumer that applies the events ends
 * with exactly what the list route answers. One chain for every test here.
 */
const CHAIN = 31337;
const KEY = "stream-key";
const AUTH = { authorization: `Bearer ${KEY}` };
const FINALITY = 16;
let anvil: AnvilInstance;
let work: WorkloadResult;
let root: string;
let follower: ReturnType<typeof createFollower>;
let service: { app: FastifyInstance; store: Store; url: string };

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Generous: the machine running the tests may be loaded; every wait returns as soon as it can. */
async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 60_000) {
	for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(25)) if (await ok()) return;
	throw new Error(`timed out waiting for ${what}`);
}

async function startService() {
	const store = await createStore(join(root, "lake"));
	const app = await buildApp({
		store,
		keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY, "other-key"] }),
		dataDir: join(root, "lake"),
		live: { pollMs: 50, heartbeatMs: 200, maxStreamsPerKey: 6, pageItems: 7 },
	});
	await app.listen({ port: 0, host: "127.0.0.1" });
	const { port } = app.server.address() as AddressInfo;
	return { app, store, url: `http://127.0.0.1:${port}` };
}

async function stopService() {
	await service.app.close();
	service.store.close();
}

const pad = (hex: string) => hex.replace(/^0x/, "").padStart(64, "0");
let clock = 0;
/** The chain's clock moved on by `seconds`: the next block's timestamp. */
const tick = (seconds: number) => {
	clock += seconds;
	return clock;
};

/** Mines one block at `time` with an ERC-20 and a native transfer to alice (amounts from `v`). */
async function mineBlock(time: number, v: number) {
	const { deployer, alice, bob } = work.accounts;
	const data = `0xa9059cbb${pad(alice)}${pad(v.toString(16))}`;
	await rpc("eth_sendTransaction", [{ from: deployer, to: work.contracts.token20, data, gas: "0x30000" }]);
	await rpc("eth_sendTransaction", [{ from: bob, to: alice, value: `0x${v.toString(16)}`, gas: "0x5208" }]);
	await rpc("evm_mine", [time]);
}

const latest = async () => (await rpc("eth_getBlockByNumber", ["latest", false])) as { number: string; hash: string };

/** Waits until the service stores the node's latest block. */
async function stored() {
	const tip = await latest();
	await until(`block ${Number(tip.number)} stored`, async () => {
		const res = await service.app.inject({ url: `/eip155-${CHAIN}/v1/blocks/latest`, headers: AUTH });
		return res.statusCode === 200 && res.json().hash === tip.hash;
	});
	return { number: Number(tip.number), hash: tip.hash };
}

/** A stream and the consumer applying its events. */
interface Reader {
	path: string;
	query: string;
	confirmations: number;
	events: SseEvent[];
	status(): number;
	body(): string;
	close(): void;
}

function open(path: string, query: string, confirmations = 0, lastId?: string): Reader {
	const q = `${query}${confirmations ? `&confirmations=${confirmations}` : ""}`;
	const s = openSse(`${service.url}/eip155-${CHAIN}/v1${path}?${q}`, {
		...AUTH,
		...(lastId ? { "last-event-id": lastId } : {}),
	});
	return { path, query, confirmations, events: s.events, status: s.status, body: s.body, close: s.close };
}

/** The consumer: items in order, those above a reorg's block dropped. */
function applied(events: SseEvent[]): { block: number; text: string }[] {
	let items: { block: number; text: string }[] = [];
	for (const e of events) {
		if (e.event === "item") {
			const item = JSON.parse(e.data);
			items.push({ block: item.block_number, text: e.data });
		} else if (e.event === "reorg") {
			const n = JSON.parse(e.data).block_number;
			items = items.filter((i) => i.block <= n);
		}
	}
	return items;
}

const heads = (r: Reader) => r.events.filter((e) => e.event === "head").map((e) => JSON.parse(e.data));

/**
 * Waits until the stream's last head event is `tip` with every item up to it (less its
 * confirmations) sent: a head event follows the pages it tells of.
 */
async function caughtUp(r: Reader, tip: { number: number; hash: string }) {
	await until(`${r.path} at block ${tip.number} (${r.status()}: ${r.body().slice(-600)})`, () => {
		const x = heads(r).at(-1);
		return (
			x?.block_number === tip.number && x.block_hash === tip.hash && x.scanned_through === tip.number - r.confirmations
		);
	});
}

/** What the list route answers for the reader's query up to `end`, as NDJSON lines. */
async function listed(r: Reader, end: number): Promise<string[]> {
	const query = `${r.query.replace(/block_number_start=\d+&?/, "")}&block_number_start=0&block_number_end=${end}`;
	const res = await service.app.inject({
		url: `/eip155-${CHAIN}/v1${r.path}?${query}&format=ndjson&limit=1000`,
		headers: AUTH,
	});
	expect(res.statusCode).toBe(200);
	return res.body.split("\n").filter((l) => l.length > 0);
}

async function expectExact(readers: Reader[], tip: { number: number; hash: string }) {
	for (const r of readers) await caughtUp(r, tip);
	for (const r of readers) {
		const got = applied(r.events).map((i) => i.text);
		const want = await listed(r, tip.number - r.confirmations);
		if (JSON.stringify(got) !== JSON.stringify(want))
			console.log(
				r.path,
				r.events
					.slice(-60)
					.map(
						(e) =>
							`${e.event} ${e.event === "item" ? JSON.parse(e.data).block_number : e.data.slice(0, 40)} ${e.id ? Buffer.from(e.id, "base64url").toString() : ""}`,
					)
					.join("\n"),
				want.map((w) => JSON.parse(w).block_number).join(","),
			);
		expect(got, `${r.path}?${r.query}`).toEqual(want);
	}
}

/** A reorg `depth` blocks deep: a branch of `depth` blocks, streamed, then replaced by one a block longer. */
async function reorg(readers: Reader[], depth: number) {
	const fork = await rpc("evm_snapshot");
	const base = clock;
	for (let i = 0; i < depth; i++) await mineBlock(tick(12), 1000 + i);
	const a = await stored();
	for (const r of readers) await caughtUp(r, a);
	await rpc("evm_revert", [fork]);
	clock = base;
	for (let i = 0; i <= depth; i++) await mineBlock(tick(13), 2000 + i);
	return stored();
}

beforeAll(async () => {
	// A zero base fee: otherwise the base fee after a revert differs and A's hash cannot come back.
	anvil = await startAnvil({ chainId: CHAIN, args: ["--block-base-fee-per-gas", "0"] });
	work = await runWorkload({ rpcUrl: anvil.url });
	await rpc("evm_setAutomine", [false]);
	clock = Number(((await rpc("eth_getBlockByNumber", ["latest", false])) as { timestamp: string }).timestamp);
	root = await mkdtemp(join(tmpdir(), "chainlake-streams-"));
	const logger = createMemoryLogger();
	follower = createFollower({
		rpc: createRpcClient({ urls: [anvil.url], logger }),
		chain: parseChainId(`eip155-${CHAIN}`),
		dataDir: join(root, "lake"),
		logger,
		traces: "parity",
		finalityDepth: FINALITY,
		partitionSize: 16,
		pollMs: 50,
		deleteGraceMs: 1000,
	});
	follower.start();
	await until(
		"the follower's first blocks",
		async () => {
			try {
				return existsSync(join(root, "lake", `eip155-${CHAIN}`, "_manifest.json"));
			} catch {
				return false;
			}
		},
		120_000,
	);
	service = await startService();
	await stored();
}, 240_000);

afterAll(async () => {
	await service?.app.close();
	service?.store.close();
	await follower?.stop();
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("streams through reorgs", () => {
	let readers: Reader[] = [];
	afterAll(() => {
		for (const r of readers) r.close();
	});
	const queries = () => [
		{ path: `/address/${work.accounts.alice}/transfers`, query: "asset_type=native,ft,nft&block_number_start=0" },
		{ path: `/contract/${work.contracts.token20}/transfers`, query: "block_number_start=0" },
		{ path: "/events", query: `contract=${work.contracts.token20}` },
	];

	it("a consumer applying the events ends with the list route's items, reorgs 1, 3 and 10 deep", async () => {
		readers = queries().map((q) => open(q.path, q.query));
		readers.push(open(queries()[0]?.path ?? "", queries()[0]?.query ?? "", 3));
		let tip = await stored();
		await expectExact(readers, tip);
		for (const depth of [1, 3, 10]) {
			tip = await reorg(readers, depth);
			await expectExact(readers, tip);
		}
		// Each stream that had items in the replaced blocks was told of the reorg.
		for (const r of readers.slice(0, 3))
			expect(r.events.filter((e) => e.event === "reorg").length).toBeGreaterThanOrEqual(3);
	}, 90_000);

	it("an A → B → A return at one height", async () => {
		const fork = await rpc("evm_snapshot");
		const t = tick(12);
		await mineBlock(t, 5000);
		const a = await stored();
		for (const r of readers) await caughtUp(r, a);
		await rpc("evm_revert", [fork]);
		const fork2 = await rpc("evm_snapshot");
		await mineBlock(t + 5, 6000);
		const b = await stored();
		expect(b.number).toBe(a.number);
		expect(b.hash).not.toBe(a.hash);
		for (const r of readers) await caughtUp(r, b);
		await rpc("evm_revert", [fork2]);
		await mineBlock(t, 5000);
		const back = await stored();
		expect(back.hash).toBe(a.hash);
		for (const r of readers) await caughtUp(r, back);

		await expectExact(readers, back);
	}, 60_000);

	it("resumes with Last-Event-ID after restarts of the service, with no gap and no duplicate, a reorg meanwhile too", async () => {
		for (const withReorg of [false, true]) {
			const fork = await rpc("evm_snapshot");
			const base = clock;
			for (let i = 0; i < 2; i++) await mineBlock(tick(12), 7000 + i);
			const before = await stored();
			for (const r of readers) await caughtUp(r, before);
			for (const r of readers) r.close();
			await stopService();
			if (withReorg) {
				// The two blocks the streams just delivered items of are replaced while the service is down.
				await rpc("evm_revert", [fork]);
				clock = base;
			}
			for (let i = 0; i < 3; i++) await mineBlock(tick(13), 8000 + i);
			await until("the follower at the node's head", async () => {
				const m = JSON.parse(await readFile(join(root, "lake", `eip155-${CHAIN}`, "_manifest.json"), "utf8"));
				const tip = await latest();
				return m.chunks.some(
					(c: { to: number; last_hash: string }) => c.to === Number(tip.number) && c.last_hash === tip.hash,
				);
			});
			service = await startService();
			const tip = await stored();
			const held = readers.map((r) => r.events.length);
			readers = readers.map((r) => {
				const last = r.events.filter((e) => e.id).at(-1)?.id;
				const next = open(r.path, r.query, r.confirmations, last);
				// One consumer across both connections: the new events follow the old ones.
				next.events.unshift(...r.events);
				expect(r.events.length).toBeGreaterThan(0);
				return next;
			});
			await expectExact(readers, tip);
			// After the reorg while it was down, each resumed stream first told it.
			for (const [i, r] of readers.entries()) {
				const resumed = r.events.slice(held[i]).filter((e) => e.event !== "head");
				// (The stream 3 blocks behind had not reached the replaced blocks.)
				expect(resumed[0]?.event).toBe(withReorg && r.confirmations === 0 ? "reorg" : "item");
			}
		}
	}, 60_000);
});

describe("stream requests", () => {
	const ask = (path: string, headers: Record<string, string> = AUTH) =>
		service.app.inject({ url: `/eip155-${CHAIN}/v1${path}`, headers: { accept: "text/event-stream", ...headers } });
	const token = () => `/contract/${work.contracts.token20}/transfers`;

	it("refuses bad input before the 200, naming the problem", async () => {
		const cases: [string, number, string, RegExp][] = [
			[`${token()}?foo=1`, 400, "INVALID_PARAMETER", /unknown parameter foo/],
			[`${token()}?confirmations=65`, 400, "INVALID_PARAMETER", /confirmations: must be a whole number from 0 to 64/],
			[`${token()}?confirmations=-1`, 400, "INVALID_PARAMETER", /confirmations/],
			[`${token()}?order=desc`, 400, "INVALID_PARAMETER", /order: a stream is in chain order/],
			[`${token()}?offset=0000000000000001-0000-00000000`, 400, "INVALID_PARAMETER", /offset: .*cursor=/],
			[`${token()}?cursor=nonsense`, 400, "INVALID_CURSOR", /cursor: not a stream cursor/],
			[`/address/0x12/transfers`, 400, "INVALID_PARAMETER", /address/],
			["/events", 400, "MISSING_FILTER", /at least one of/],
			["/nothing-here", 404, "NOT_FOUND", /no route/],
		];
		for (const [path, status, code, message] of cases) {
			const res = await ask(path);
			expect(res.statusCode, path).toBe(status);
			expect(res.json(), path).toMatchObject({ code, message: expect.stringMatching(message) });
		}
		expect((await ask(token(), {})).statusCode).toBe(401);
	});

	it("are documented: text/event-stream on every streaming route's 200, with Last-Event-ID", async () => {
		const doc = (await service.app.inject({ url: "/openapi.json" })).json();
		type Op = { responses?: Record<string, { content?: Record<string, unknown> }> };
		const streaming = Object.entries(doc.paths as Record<string, { get?: Op }>).filter(
			([, m]) => m.get?.responses?.["200"]?.content?.["text/event-stream"] !== undefined,
		);
		expect(streaming.map(([p]) => p.replace("/{chain_id}/v1", "")).sort()).toEqual(
			[
				"/address/{address}/transfers",
				"/address/{address}/txs",
				"/blocks",
				"/calls",
				"/contract/{contract}/transfers",
				"/contracts/creates",
				"/contracts/self-destructs",
				"/events",
			].sort(),
		);
	});

	it("refuses a cursor of another query", async () => {
		const res = await service.app.inject({
			url: `/eip155-${CHAIN}/v1${token()}?block_number_start=0&block_number_end=30`,
			headers: { ...AUTH, accept: "text/event-stream" },
		});
		expect(res.statusCode).toBe(200);
		// The headers every answer has, on a stream too (Fastify's onSend hooks do not run on it).
		expect(res.headers).toMatchObject({
			"content-type": "text/event-stream; charset=utf-8",
			"cache-control": "no-store",
			"access-control-allow-origin": "*",
			"x-content-type-options": "nosniff",
		});
		const id = /\nid: (\S+)/.exec(res.body)?.[1] ?? "";
		expect(id).not.toBe("");
		const other = await ask(`/events?contract=${work.contracts.token20}`, { ...AUTH, "last-event-id": id });
		expect(other.statusCode).toBe(400);
		expect(other.json()).toMatchObject({ code: "CURSOR_MISMATCH", message: expect.stringMatching(/another query/) });
		// The same query resumes from it.
		const same = await ask(`${token()}?block_number_start=0&block_number_end=30&cursor=${id}`);
		expect(same.statusCode).toBe(200);
	});

	it("charges a stream once against the key's rate limit, not each of its pages", async () => {
		const store = await createStore(join(root, "lake"));
		const app = await buildApp({
			store,
			keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
			dataDir: join(root, "lake"),
			rateLimit: { perSecond: 0.01, burst: 2 },
			live: { pageItems: 1 },
		});
		try {
			const url = `/eip155-${CHAIN}/v1/blocks?block_number_start=0&block_number_end=20`;
			const res = await app.inject({ url, headers: { ...AUTH, accept: "text/event-stream" } });
			expect(res.statusCode).toBe(200);
			// 21 pages of one block each, all sent; the stream's open took one token, and its headers say so.
			expect(res.body.match(/event: item/g)?.length).toBe(21);
			expect(res.body).toContain("event: end");
			expect(res.headers["x-ratelimit-remaining"]).toBe("1");
			expect((await app.inject({ url, headers: AUTH })).statusCode).toBe(200);
			expect((await app.inject({ url, headers: AUTH })).statusCode).toBe(429);
		} finally {
			await app.close();
			store.close();
		}
	});

	it("asks for smaller pages where the route finds a page too large for one answer", async () => {
		const store = await createStore(join(root, "lake"));
		const app = await buildApp({
			store,
			keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
			dataDir: join(root, "lake"),
			// One block's item fits, two do not (a block is about 2.6 KB of JSON here).
			maxResponseBytes: 4000,
			live: { pageItems: 100 },
		});
		try {
			const url = `/eip155-${CHAIN}/v1/blocks?block_number_start=0&block_number_end=10`;
			expect((await app.inject({ url: `${url}&limit=100`, headers: AUTH })).json().code).toBe("RESPONSE_TOO_LARGE");
			const res = await app.inject({ url, headers: { ...AUTH, accept: "text/event-stream" } });
			expect(res.body.match(/event: item/g)?.length).toBe(11);
			expect(res.body).toContain("event: end");
		} finally {
			await app.close();
			store.close();
		}
	});

	it("outlives the handler deadline and the idle timeout of ordinary requests", async () => {
		const store = await createStore(join(root, "lake"));
		const app = await buildApp({
			store,
			keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
			dataDir: join(root, "lake"),
			timeouts: { handlerMs: 500, idleMs: 1000 },
			live: { heartbeatMs: 200 },
		});
		await app.listen({ port: 0, host: "127.0.0.1" });
		const { port } = app.server.address() as AddressInfo;
		const s = openSse(`http://127.0.0.1:${port}/eip155-${CHAIN}/v1/blocks?block_number_start=-2`, AUTH);
		try {
			await sleep(2500);
			const events = s.events.map((e) => e.event);
			expect(events.filter((e) => e === "head").length).toBeGreaterThanOrEqual(5);
			expect(events).not.toContain("error");
			expect(s.status()).toBe(200);
		} finally {
			s.close();
			await app.close();
			store.close();
		}
	});

	it("caps open streams per key with a 429, and a closed socket frees everything", async () => {
		const live = service.app.live;
		const watcher = live.watcher(`eip155-${CHAIN}`);
		await until("no stream open", () => live.open.total === 0);
		const mine = Array.from({ length: 6 }, () => open(token(), "block_number_start=0"));
		await until("six streams open", () => live.open.total === 6 && mine.every((r) => r.events.length > 0));
		const metrics = await service.app.inject({ url: "/metrics", headers: AUTH });
		expect(metrics.body).toMatch(/^chainlake_streams_open 6$/m);
		const refused = await ask(`${token()}?block_number_start=0&block_number_end=1`);
		expect(refused.statusCode).toBe(429);
		expect(refused.json()).toMatchObject({ code: "STREAM_LIMIT", message: expect.stringMatching(/6 streams open/) });
		// Another key has its own allowance.
		const other = openSse(`${service.url}/eip155-${CHAIN}/v1${token()}`, { authorization: "Bearer other-key" });
		await until("the other key's stream open", () => live.open.total === 7);
		for (const r of mine) r.close();
		await until("six streams closed", () => live.open.total === 1 && watcher.waiting() <= 1);
		other.close();
		await until("nothing left", () => live.open.total === 0 && watcher.waiting() === 0);
		expect(live.open.byKey.size).toBe(0);
	});
});
