import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { HOOK_OWNER_HEADER } from "../../src/api/auth.js";
import { parseAllowHosts } from "../../src/api/hooks/destinations.js";
import { type HookDelivery, startHookDelivery } from "../../src/api/hooks/hook-delivery.js";
import { hooksDir, newHookId, readState, writeHook } from "../../src/api/hooks/hook-files.js";
import { DEFAULT_DELIVERY } from "../../src/api/hooks/hook-worker.js";
import { createKeyring, hashKey } from "../../src/api/keys.js";
import { FEED_HEADER } from "../../src/api/live/live-options.js";
import { MAX_HOOKS_PER_KEY } from "../../src/api/routes/hooks.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type ApiFixture, startApiOnWorkload, TEST_KEY } from "../helpers/api.js";
import { type HookReceiver, startHookReceiver } from "../helpers/hook-receiver.js";

/**
 * Webhooks attacked (issue 29, "Bad input"): a hostile client's bodies, requests racing each
 * other on one hook, a hook deleted while its backlog is being delivered, and an operator's bad
 * luck (a hook file unreadable for a moment, a temporary file a crash left). Real API over the
 * workload's lake (no follower: the lake is still), a real deliverer and receiver on loopback.
 */
const SECRET = "hostile-secret-0123456789";
const POLICY = parseAllowHosts("127.0.0.1");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let f: ApiFixture;
let receiver: HookReceiver;
let C: string;

const call = async (method: "GET" | "POST" | "DELETE", url: string, body?: unknown) => {
	const r = await f.app.inject({
		method,
		url,
		headers: { authorization: `Bearer ${TEST_KEY}` },
		payload: body as object | undefined,
	});
	return { status: r.statusCode, body: r.body ? r.json() : null };
};
/** A hook on every block of the lake: one item per block, a backlog of many batches of one. */
const blocksHook = (over: Record<string, unknown> = {}) => ({
	path: `/${C}/v1/blocks`,
	query: { block_number_start: "0", block_number_end: "latest" },
	url: receiver.url,
	secret: SECRET,
	...over,
});
const make = async (over: Record<string, unknown> = {}) => {
	const r = await call("POST", `/${C}/v1/hooks`, blocksHook(over));
	expect(r.status, JSON.stringify(r.body)).toBe(201);
	return r.body.id as string;
};
function deliver(over: Partial<Parameters<typeof startHookDelivery>[1]> = {}, app = f.app): HookDelivery {
	return startHookDelivery(app, {
		...DEFAULT_DELIVERY,
		policy: POLICY,
		backoffMs: 50,
		maxBackoffMs: 200,
		lingerMs: 20,
		timeoutMs: 2000,
		dataDir: f.dataDir,
		chains: () => [C],
		ownerValid: () => true,
		pollMs: 100,
		log: createMemoryLogger(),
		...over,
	});
}

beforeAll(async () => {
	f = await startApiOnWorkload({ app: { hookPolicy: POLICY } });
	C = f.chain;
	receiver = await startHookReceiver(SECRET);
}, 120_000);

afterAll(async () => {
	await receiver?.close();
	await f?.close();
});

describe("hostile webhook requests", () => {
	it("refuse paths, parameters and secrets a list route never takes, naming the problem", async () => {
		const refused = async (over: Record<string, unknown>, code: string, message: RegExp) => {
			const r = await call("POST", `/${C}/v1/hooks`, blocksHook(over));
			expect(r, JSON.stringify(over)).toMatchObject({
				status: 400,
				body: { code, message: expect.stringMatching(message) },
			});
		};
		const wallet = f.work.accounts.alice.toLowerCase();
		// The feed asks the path in process: '#' cut it short, '..' led to another route (a 404 "no route GET").
		const odd = /has characters no list route's path has/;
		await refused({ path: `/${C}/v1/address/${wallet}#/transfers` }, "INVALID_HOOK_PATH", odd);
		await refused({ path: `/${C}/v1/contract/../transfers` }, "INVALID_HOOK_PATH", odd);
		await refused({ path: `/${C}/v1/address/%2e%2e/transfers` }, "INVALID_HOOK_PATH", odd);
		// Names of Object.prototype's members are parameters like any other (they were "given twice").
		await refused({ path: `/${C}/v1/blocks?constructor=1` }, "INVALID_PARAMETER", /unknown parameter constructor/);
		await refused(
			{ query: { block_number_start: "0", block_number_end: "latest", hasOwnProperty: "1" } },
			"INVALID_PARAMETER",
			/unknown parameter hasOwnProperty/,
		);
		await refused({ query: { block_number_start: ["0", "1"] } }, "INVALID_PARAMETER", /must be one value/);
		await refused(
			{ url: `${receiver.url}?${"x".repeat(2000)}` },
			"INVALID_PARAMETER",
			/url: must be at most 2000 characters/,
		);
		await refused(
			{ path: `/${C}/v1/blocks?confirmations=3` },
			"INVALID_HOOK_QUERY",
			/confirmations is the hook's own field/,
		);
		// Signed as UTF-8: a lone surrogate would sign with U+FFFD, a key the receiver does not hold.
		await refused({ secret: "\ud800".repeat(16) }, "INVALID_PARAMETER", /secret: must be printable text/);
		await refused({ secret: "0123456789abcdef\n" }, "INVALID_PARAMETER", /secret: must be printable text/);
		expect((await call("POST", `/${C}/v1/hooks`, blocksHook({ secret: "ünïcødé-sécret-ok" }))).status).toBe(201);
		// The hook owner's header without the feed's process token is ignored: no key, no entry.
		const spoofed = await f.app.inject({
			method: "GET",
			url: `/${C}/v1/hooks`,
			headers: { [HOOK_OWNER_HEADER]: hashKey(TEST_KEY).toString("hex"), [FEED_HEADER]: "guessed-token" },
		});
		expect(spoofed.statusCode).toBe(401);
	});

	it("take replays at once (each 202, no temporary file left), and never bring back a deleted hook", async () => {
		const id = await make({ url: receiver.url.replace("/in", "/ignore") });
		const replays = await Promise.all(
			Array.from({ length: 8 }, (_, i) => call("POST", `/${C}/v1/hooks/${id}/replay`, { from_block: i })),
		);
		// They shared one temporary name: one request renamed another's file away (500 INTERNAL).
		expect(replays.map((r) => r.status)).toEqual(Array(8).fill(202));
		expect(readdirSync(hooksDir(f.dataDir, C)).filter((n) => n.endsWith(".tmp"))).toEqual([]);
		for (let i = 0; i < 6; i++) {
			const victim = await make({ url: receiver.url.replace("/in", "/ignore") });
			const replay = call("POST", `/${C}/v1/hooks/${victim}/replay`, { from_block: 1 });
			await sleep(i);
			const deleted = await call("DELETE", `/${C}/v1/hooks/${victim}`);
			const replayed = await replay;
			expect([replayed.status, deleted.status]).not.toContain(500);
			// A replay that read the hook before the DELETE wrote it back, after the 204.
			if (deleted.status === 204) expect((await call("GET", `/${C}/v1/hooks/${victim}`)).status).toBe(404);
		}
	});
	it("keep a key to its most hooks when many are made at once", async () => {
		const owner = hashKey(TEST_KEY).toString("hex");
		const own = (await call("GET", `/${C}/v1/hooks`)).body.items.length as number;
		const template = { chain: C, owner, path: `/${C}/v1/blocks`, url: receiver.url, secret: SECRET };
		// Filled to 5 below the limit on disk (as POSTs would have), then 10 POSTs at once.
		for (let i = own; i < MAX_HOOKS_PER_KEY - 5; i++)
			await writeHook(f.dataDir, {
				...template,
				id: newHookId(),
				query: { block_number_start: "0", block_number_end: "1" },
				confirmations: 0,
				from_block: null,
				created_at: new Date().toISOString(),
				generation: 1,
				replayed_at: null,
			});
		const made = await Promise.all(Array.from({ length: 10 }, () => call("POST", `/${C}/v1/hooks`, blocksHook())));
		// (Counted only before the route check, each passed before any had written: all ten were made.)
		expect(made.map((r) => r.status).sort()).toEqual([...Array(5).fill(201), ...Array(5).fill(400)]);
		expect(made.find((r) => r.status === 400)?.body.code).toBe("TOO_MANY_HOOKS");
		expect((await call("GET", `/${C}/v1/hooks`)).body.items).toHaveLength(MAX_HOOKS_PER_KEY);
		rmSync(hooksDir(f.dataDir, C), { recursive: true });
	});
});

describe("an unlucky operator's webhooks", () => {
	it("stop delivering a deleted hook's backlog at once, not at the deliverer's next poll", async () => {
		for (const h of (await call("GET", `/${C}/v1/hooks`)).body.items) await call("DELETE", `/${C}/v1/hooks/${h.id}`);
		// One event a batch, each answered after 30 ms: the lake's blocks are a backlog of many batches.
		receiver.delayMs = 30;
		const id = await make();
		const delivery = deliver({ maxBatch: 1, pollMs: 60_000 });
		try {
			const before = receiver.batches.length;
			for (const end = Date.now() + 20_000; Date.now() < end && receiver.batches.length < before + 2; ) await sleep(10);
			expect(receiver.batches.length).toBeGreaterThanOrEqual(before + 2);
			expect((await call("DELETE", `/${C}/v1/hooks/${id}`)).status).toBe(204);
			const atDelete = receiver.batches.length;
			await sleep(500);
			// The contract: "a batch under way may still arrive once". Without the check, every batch of the backlog came.
			expect(receiver.batches.length - atDelete).toBeLessThanOrEqual(1);
		} finally {
			receiver.delayMs = 0;
			await delivery.stop();
		}
	});

	it("let go of an attempt a receiver holds at once when stopping, not at its deadline", {
		timeout: 20_000,
	}, async () => {
		// Answered after a minute, with a deadline of a minute: stop() (and a DELETE's poll) waited all of it.
		receiver.delayMs = 60_000;
		const id = await make({ query: { block_number_start: "0", block_number_end: "2" } });
		const delivery = deliver({ timeoutMs: 60_000 });
		try {
			for (const end = Date.now() + 10_000; Date.now() < end && receiver.inFlight === 0; ) await sleep(10);
			expect(receiver.inFlight).toBe(1);
			await delivery.stop();
			for (const end = Date.now() + 5_000; Date.now() < end && receiver.inFlight > 0; ) await sleep(10);
			expect(receiver.inFlight).toBe(0);
		} finally {
			receiver.delayMs = 0;
			await delivery.stop();
			await call("DELETE", `/${C}/v1/hooks/${id}`);
		}
	});

	it("keep a hook whose file cannot be read for a moment, and clear a crashed write's temporary file", async () => {
		const id = await make({ query: { block_number_start: "0", block_number_end: "3" } });
		const dir = hooksDir(f.dataDir, C);
		const delivery = deliver();
		try {
			for (const end = Date.now() + 20_000; Date.now() < end && readState(f.dataDir, C, id)?.status !== "completed"; )
				await sleep(20);
			const state = readState(f.dataDir, C, id);
			expect(state).toMatchObject({ status: "completed", last_delivered_block: 3 });
			// A read that fails (here EISDIR; EMFILE or EIO alike) is not a deletion: its state (the cursor) stays.
			renameSync(join(dir, `${id}.json`), join(dir, "aside"));
			mkdirSync(join(dir, `${id}.json`));
			// What an API process SIGKILLed mid-write leaves, two minutes ago (while this deliverer holds the lock).
			const temp = join(dir, `${id}.json.4242.0badc0de.tmp`);
			writeFileSync(temp, '{"half": ');
			utimesSync(temp, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
			await sleep(500);
			expect(readState(f.dataDir, C, id)).toEqual(state);
			expect(existsSync(temp)).toBe(false);
			rmSync(join(dir, `${id}.json`), { recursive: true });
			renameSync(join(dir, "aside"), join(dir, `${id}.json`));
			expect((await call("GET", `/${C}/v1/hooks/${id}`)).body.delivery).toMatchObject({ status: "completed" });
		} finally {
			await delivery.stop();
		}
	});

	it("make and deliver hooks under a base path (serve --base-path)", async () => {
		// The feed asked the hook's path of the routes without the prefix they are registered under: a 404 at every POST.
		const app = await buildApp({
			store: f.store,
			keyring: createKeyring({ path: join(f.dataDir, "_keys.json"), envKeys: [TEST_KEY] }),
			dataDir: f.dataDir,
			basePath: "/tsunami",
			hookPolicy: POLICY,
		});
		const delivery = deliver({ basePath: "/tsunami" }, app);
		try {
			const made = await app.inject({
				method: "POST",
				url: `/tsunami/${C}/v1/hooks`,
				headers: { authorization: `Bearer ${TEST_KEY}` },
				payload: blocksHook({
					path: `/tsunami/${C}/v1/blocks`,
					query: { block_number_start: "0", block_number_end: "2" },
				}),
			});
			expect(made.statusCode, made.body).toBe(201);
			const id = made.json().id as string;
			for (const end = Date.now() + 20_000; Date.now() < end && readState(f.dataDir, C, id)?.status !== "completed"; )
				await sleep(20);
			expect(readState(f.dataDir, C, id)).toMatchObject({ status: "completed", last_delivered_block: 2, attempts: 0 });
		} finally {
			await delivery.stop();
			await app.close();
		}
	});
});
