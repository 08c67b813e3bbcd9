import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { parseAllowHosts } from "../../src/api/hooks/destinations.js";
import { type HookDelivery, startHookDelivery } from "../../src/api/hooks/hook-delivery.js";
import { readState } from "../../src/api/hooks/hook-files.js";
import { DEFAULT_DELIVERY } from "../../src/api/hooks/hook-worker.js";
import { createKey, createKeyring, hashKey, revokeKey } from "../../src/api/keys.js";
import { startFollowers } from "../../src/follow/followers.js";
import { createStore } from "../../src/query/store/create-store.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { type HookReceiver, startHookReceiver } from "../helpers/hook-receiver.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * Webhooks end to end on a real anvil chain: the workload, the follower in this process, the API
 * with its deliverer, and a real receiver on loopback (test/helpers/hook-receiver.ts) that checks
 * every signature. What the receiver holds, after reorgs 1, 3 and 10 deep and an A → B → A return (evm_snapshot/evm_revert)
 * and a spell of 500s, equals what the list route answers for the same query.
 */
const CHAIN = 31337;
const C = `eip155-${CHAIN}`;
const KEY = "hooks-key-0123456789";
const OTHER = "other-key-0123456789";
const SECRET = "a-secret-of-at-least-16";
const auth = (key = KEY) => ({ authorization: `Bearer ${key}` });

let anvil: AnvilInstance;
let work: WorkloadResult;
let dir: string;
let follow: ReturnType<typeof startFollowers>;
let app: Awaited<ReturnType<typeof buildApp>>;
let store: Awaited<ReturnType<typeof createStore>>;
let delivery: HookDelivery;
let receiver: HookReceiver;
let wallet: string;
let hookId: string;

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const inject = async (method: "GET" | "POST" | "DELETE", url: string, body?: unknown, key = KEY) => {
	const r = await app.inject({ method, url, headers: auth(key), payload: body as object | undefined });
	return { status: r.statusCode, body: r.body ? r.json() : null, headers: r.headers };
};
const hookBody = (over: Record<string, unknown> = {}) => ({
	path: `/${C}/v1/address/${wallet}/transfers`,
	query: { asset_type: "native,ft,nft" },
	url: receiver.url,
	secret: SECRET,
	...over,
});

/** Every item the list route answers for the hook's query, in chain order. */
async function listed(): Promise<Record<string, unknown>[]> {
	const items: Record<string, unknown>[] = [];
	for (let offset = ""; ; ) {
		const r = await inject(
			"GET",
			`/${C}/v1/address/${wallet}/transfers?asset_type=native,ft,nft&limit=1000${offset ? `&offset=${offset}` : ""}`,
		);
		items.push(...r.body.items);
		if (!r.body.range.has_more) return items;
		offset = r.body.range.next_offset;
	}
}

/** Waits until the receiver holds exactly the list route's items (in order), and returns them. */
async function converged(timeoutMs = 60_000) {
	const deadline = Date.now() + timeoutMs;
	let want: Record<string, unknown>[] = [];
	let held: Record<string, unknown>[] = [];
	while (Date.now() < deadline) {
		want = await listed();
		held = [...receiver.items.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, item]) => item);
		if (JSON.stringify(held) === JSON.stringify(want)) return want;
		await sleep(100);
	}
	expect(held).toEqual(want);
	return want;
}

/**
 * The hook's delivery state once `ok` holds (the receiver applies a batch before it answers, so
 * the state the deliverer writes after the 2xx can come a moment after the receiver has it).
 */
async function stateWhen(id: string, ok: (s: Record<string, unknown>) => boolean) {
	let state: Record<string, unknown> = {};
	for (const end = Date.now() + 30_000; Date.now() < end; await sleep(50)) {
		state = (await inject("GET", `/${C}/v1/hooks/${id}`)).body.delivery;
		if (ok(state)) break;
	}
	return state;
}

/** The stored head, once the follower has stored the node's (the same block: number and hash). */
async function stored(): Promise<number> {
	const tip = (await rpc("eth_getBlockByNumber", ["latest", false])) as { number: string; hash: string };
	const head = Number(tip.number);
	// A wait, not a timing check: long enough for a loaded machine.
	for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
		const r = await inject("GET", `/${C}/v1/blocks/latest`);
		if (r.status === 200 && r.body.number === head && r.body.hash === tip.hash) return head;
		await sleep(50);
	}
	throw new Error(`the follower did not store block ${head} (${tip.hash})`);
}

/** A native transfer to the wallet, mined in its own block. */
const pay = (wei: number) =>
	sendMined(anvil.url, { from: work.accounts.bob, to: wallet, value: `0x${wei.toString(16)}` });

beforeAll(async () => {
	// A zero base fee: otherwise the base fee after a revert differs and A's hash cannot come back (A → B → A).
	anvil = await startAnvil({ chainId: CHAIN, args: ["--block-base-fee-per-gas", "0"] });
	work = await runWorkload({ rpcUrl: anvil.url });
	wallet = work.accounts.alice.toLowerCase();
	dir = await mkdtemp(join(tmpdir(), "chainlake-hooks-"));
	const logger = createMemoryLogger();
	follow = startFollowers([{ chain: C, urls: [anvil.url] }], {
		dataDir: dir,
		logger,
		pollMs: 100,
		// Above the deepest reorg below (10 blocks): a reorg deeper than it is the follower's to refuse.
		finalityDepth: 16,
		partitionSize: 16,
	});
	for (let i = 0; i < 200 && follow.sources.get(C)?.stats.lastStepAt == null; i++) await sleep(50);
	store = await createStore(dir);
	const keyring = createKeyring({ path: join(dir, "k.json"), envKeys: [KEY, OTHER] });
	const policy = parseAllowHosts("127.0.0.1");
	app = await buildApp({ store, keyring, dataDir: dir, followers: follow.sources, hookPolicy: policy });
	delivery = startHookDelivery(app, {
		...DEFAULT_DELIVERY,
		policy,
		// Short waits, so a spell of failures costs the test little time.
		backoffMs: 50,
		maxBackoffMs: 400,
		lingerMs: 50,
		timeoutMs: 2000,
		dataDir: dir,
		chains: () => store.chains(),
		ownerValid: (owner) => keyring.holds(owner),
		pollMs: 100,
		log: logger,
	});
	receiver = await startHookReceiver(SECRET);
	await stored();
}, 120_000);

afterAll(async () => {
	await delivery?.stop();
	await follow?.stop();
	await app?.close();
	store?.close();
	await receiver?.close();
	await anvil?.stop();
	await rm(dir, { recursive: true, force: true });
});

describe("making webhooks", () => {
	it("refuses what the list route would refuse, and hostile destinations, naming the problem", async () => {
		const refused = async (over: Record<string, unknown>, code: string, message: RegExp) => {
			const r = await inject("POST", `/${C}/v1/hooks`, hookBody(over));
			expect(r, JSON.stringify(over)).toMatchObject({
				status: 400,
				body: { code, message: expect.stringMatching(message) },
			});
		};
		await refused({ path: `/${C}/v1/address/${wallet}/nope` }, "INVALID_HOOK_PATH", /\/nope" is not a list route/);
		await refused({ path: `/${C}/v1/blocks/latest` }, "INVALID_HOOK_PATH", /is not a list route/);
		await refused({ query: { asset_type: "native", colour: "red" } }, "INVALID_PARAMETER", /colour/);
		await refused({ query: { asset_type: "gold" } }, "INVALID_PARAMETER", /asset_type/);
		await refused(
			{ path: `/eip155-1/v1/address/${wallet}/transfers` },
			"INVALID_HOOK_PATH",
			/not a route of eip155-31337/,
		);
		await refused({ query: { order: "desc" } }, "INVALID_HOOK_QUERY", /cannot take order/);
		await refused({ confirmations: 65 }, "INVALID_PARAMETER", /confirmations: must be from 0 to 64/);
		await refused({ secret: "short" }, "INVALID_PARAMETER", /secret: must be at least 16 characters/);
		await refused({ extra: 1 }, "INVALID_PARAMETER", /unknown parameter extra/);
		await refused({ url: "http://169.254.169.254/latest/meta-data/" }, "HOOK_URL_REFUSED", /link-local/);
		await refused({ url: "http://127.0.0.2:9/" }, "HOOK_URL_REFUSED", /127\.0\.0\.2 is a loopback address/);
		await refused({ url: "http://[::1]:9/" }, "HOOK_URL_REFUSED", /::1 is a loopback address/);
		await refused({ url: "file:///etc/passwd" }, "HOOK_URL_REFUSED", /scheme file:/);
		await refused({ from_block: 10, query: { block_number_end: "5" } }, "INVALID_RANGE", /before/);
		const notJson = await app.inject({
			method: "POST",
			url: `/${C}/v1/hooks`,
			headers: { ...auth(), "content-type": "text/plain" },
			payload: "hello",
		});
		expect(notJson.statusCode).toBe(400);
		expect(notJson.json().message).toMatch(/^body: must be a JSON object .* application\/json/);
	});

	it("keeps each key's hooks to itself; replays and deletes", async () => {
		const made = await inject(
			"POST",
			`/${C}/v1/hooks`,
			hookBody({ url: receiver.url.replace("/in", "/ignore"), from_block: 0 }),
		);
		expect(made.status, JSON.stringify(made.body)).toBe(201);
		expect(made.body).not.toHaveProperty("secret");
		expect(made.body).toMatchObject({ url: receiver.url.replace("/in", "/ignore"), confirmations: 0, from_block: 0 });
		expect(made.headers.location).toBe(`/${C}/v1/hooks/${made.body.id}`);
		const id = made.body.id as string;
		expect((await inject("GET", `/${C}/v1/hooks/${id}`, undefined, OTHER)).status).toBe(404);
		expect((await inject("DELETE", `/${C}/v1/hooks/${id}`, undefined, OTHER)).status).toBe(404);
		expect((await inject("GET", `/${C}/v1/hooks`, undefined, OTHER)).body.items).toEqual([]);
		expect((await inject("GET", `/${C}/v1/hooks`)).body.items.map((h: { id: string }) => h.id)).toContain(id);
		const replay = await inject("POST", `/${C}/v1/hooks/${id}/replay`, { from_block: 3 });
		expect(replay).toMatchObject({ status: 202, body: { id, from_block: 3, delivery: { status: "pending" } } });
		expect((await inject("POST", `/${C}/v1/hooks/${id}/replay`, {})).status).toBe(400);
		expect((await inject("DELETE", `/${C}/v1/hooks/${id}`)).status).toBe(204);
		expect((await inject("GET", `/${C}/v1/hooks/${id}`)).body.code).toBe("HOOK_NOT_FOUND");
		expect(hashKey(KEY).toString("hex")).toMatch(/^[0-9a-f]{64}$/);
	});
});

describe("deliveries", () => {
	it("deliver the list route's items from block 0, signed, in order", async () => {
		const made = await inject("POST", `/${C}/v1/hooks`, hookBody());
		expect(made.status).toBe(201);
		hookId = made.body.id;
		const items = await converged();
		expect(items.length).toBeGreaterThan(5);
		expect(receiver.badSignatures).toBe(0);
		const last = Number(items.at(-1)?.block_number);
		const state = await stateWhen(hookId, (st) => st.last_delivered_block === last);
		expect(state).toMatchObject({ status: "active", attempts: 0, last_error: null });
		expect(state.last_delivered_block).toBe(Number(items.at(-1)?.block_number));
		// A forged delivery is told apart: the receiver's check is not a formality.
		const forged = await fetch(receiver.url, {
			method: "POST",
			headers: { "x-chainlake-timestamp": String(Math.floor(Date.now() / 1000)), "x-chainlake-signature": "sha256=00" },
			body: "{}",
		});
		expect(forged.status).toBe(401);
	});

	it.each([1, 3, 10])("retract a reorg %i blocks deep exactly, then go on with the new branch", async (depth) => {
		await stored();
		const snapshot = await rpc("evm_snapshot");
		const base = Number(await rpc("eth_blockNumber"));
		for (let i = 0; i < depth; i++) await pay(1000 + depth * 10 + i);
		await stored();
		await converged();
		const before = receiver.applied.length;
		await rpc("evm_revert", [snapshot]);
		// The new branch: one block longer, with other transfers to the wallet.
		for (let i = 0; i <= depth; i++) await pay(2000 + depth * 10 + i);
		await stored();
		const items = await converged();
		const reorgs = receiver.applied.slice(before).filter((e) => e.type === "reorg");
		expect(reorgs.map((e) => e.block_number)).toContain(base);
		expect(items.filter((t) => Number(t.block_number) > base).map((t) => t.value)).toEqual(
			Array.from({ length: depth + 1 }, (_, i) => String(2000 + depth * 10 + i)),
		);
		expect(receiver.outOfOrder).toEqual([]);
	});

	it("follow an A → B → A return at one height: the receiver ends with A's items again", async () => {
		await stored();
		const { bob } = work.accounts;
		// Blocks mined by hand at chosen times: the same transaction at the same time and height
		// gives the same block hash, so the chain really returns to A.
		const mineAt = async (time: number, wei: number) => {
			await rpc("eth_sendTransaction", [{ from: bob, to: wallet, value: `0x${wei.toString(16)}`, gas: "0x5208" }]);
			await rpc("evm_mine", [time]);
		};
		await rpc("evm_setAutomine", [false]);
		try {
			const fork = await rpc("evm_snapshot");
			const base = Number(await rpc("eth_blockNumber"));
			const t =
				Number(((await rpc("eth_getBlockByNumber", ["latest", false])) as { timestamp: string }).timestamp) + 12;
			await mineAt(t, 5001);
			const a = (await rpc("eth_getBlockByNumber", ["latest", false])) as { hash: string };
			await stored();
			await converged();
			const before = receiver.applied.length;
			await rpc("evm_revert", [fork]);
			const fork2 = await rpc("evm_snapshot");
			await mineAt(t + 5, 6001);
			expect(await stored()).toBe(base + 1);
			expect(((await converged()).at(-1) as { value: string }).value).toBe("6001");
			await rpc("evm_revert", [fork2]);
			await mineAt(t, 5001);
			const back = (await rpc("eth_getBlockByNumber", ["latest", false])) as { hash: string };
			expect(back.hash).toBe(a.hash);
			await stored();
			const items = await converged();
			expect(items.filter((i) => Number(i.block_number) > base).map((i) => i.value)).toEqual(["5001"]);
			// Each return was told: the receiver applied a reorg to `base` twice.
			const reorgs = receiver.applied.slice(before).filter((e) => e.type === "reorg");
			expect(reorgs.filter((e) => e.block_number === base).length).toBeGreaterThanOrEqual(2);
			expect(receiver.outOfOrder).toEqual([]);
		} finally {
			await rpc("evm_setAutomine", [true]);
		}
	});

	it("retry a failing destination with backoff, mark the hook failing, and recover", async () => {
		receiver.failing = true;
		await pay(3001);
		await pay(3002);
		let state: Record<string, unknown> = {};
		for (const end = Date.now() + 30_000; Date.now() < end; ) {
			state = (await inject("GET", `/${C}/v1/hooks/${hookId}`)).body.delivery;
			if (state.status === "failing" && Number(state.attempts) >= 3) break;
			await sleep(50);
		}
		expect(state).toMatchObject({ status: "failing", last_error: "HTTP 500 from the destination" });
		expect(Number(state.attempts)).toBeGreaterThanOrEqual(3);
		expect(Date.parse(String(state.failing_since))).toBeLessThanOrEqual(Date.parse(String(state.next_attempt_at)));
		// The same batch each time, nothing after it meanwhile.
		expect(new Set(receiver.refusedBodies).size).toBe(1);
		const listedHooks = (await inject("GET", `/${C}/v1/hooks`)).body.items;
		expect(listedHooks.find((h: { id: string }) => h.id === hookId).delivery.status).toBe("failing");
		receiver.failing = false;
		await converged();
		const after = await stateWhen(hookId, (st) => st.status === "active");
		expect(after).toMatchObject({ status: "active", attempts: 0, failing_since: null, next_attempt_at: null });
		expect(after.last_error).toBe("HTTP 500 from the destination");
		expect(receiver.outOfOrder).toEqual([]);
	});

	it("do not follow a redirect: the hook fails and says why", async () => {
		const made = await inject(
			"POST",
			`/${C}/v1/hooks`,
			hookBody({ url: receiver.url.replace("/in", "/redirect"), from_block: Number(await rpc("eth_blockNumber")) - 3 }),
		);
		expect(made.status).toBe(201);
		let state: Record<string, unknown> = {};
		for (const end = Date.now() + 30_000; Date.now() < end && state.status !== "failing"; ) {
			await sleep(50);
			state = (await inject("GET", `/${C}/v1/hooks/${made.body.id}`)).body.delivery;
		}
		expect(state).toMatchObject({
			status: "failing",
			last_error: expect.stringMatching(/HTTP 302: redirects are not followed/),
		});
		expect(receiver.redirects).toBeGreaterThan(0);
		expect(receiver.elsewhere).toBe(0);
		expect((await inject("DELETE", `/${C}/v1/hooks/${made.body.id}`)).status).toBe(204);
	});

	it("pause once the key that made them is revoked", async () => {
		const keys = join(dir, "k.json");
		const { key, id: keyId } = createKey(keys, "revocable");
		const made = await inject("POST", `/${C}/v1/hooks`, hookBody({ url: receiver.url.replace("/in", "/ignore") }), key);
		expect(made.status).toBe(201);
		const state = () => readState(dir, C, made.body.id);
		for (const end = Date.now() + 30_000; Date.now() < end && !state()?.delivered_events; ) await sleep(50);
		expect(state()).toMatchObject({ status: "active" });
		revokeKey(keys, keyId);
		for (const end = Date.now() + 30_000; Date.now() < end && state()?.status !== "paused"; ) await sleep(50);
		expect(state()).toMatchObject({ status: "paused", last_error: expect.stringMatching(/revoked/) });
		expect((await inject("GET", `/${C}/v1/hooks/${made.body.id}`, undefined, key)).status).toBe(401);
	});
});
