import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { spawnScript } from "../helpers/cli.js";
import { type HookReceiver, startHookReceiver } from "../helpers/hook-receiver.js";
import { sendMined } from "../helpers/node-rpc.js";

/**
 * A webhook across a crash, with the real scripts: `serve --follow` (the writer) and a `serve`
 * reader beside it over one folder; one of them holds the chain's hooks lock and delivers. It is
 * SIGKILLed while a batch is at the receiver unanswered and blocks keep coming (the writer, if it
 * was the one, is started again); the other process (or the new one) takes the lock and resumes
 * from the hook's durable cursor. The receiver ends holding exactly the list route's items, got
 * again only items of the batch the crash left unacknowledged, and never two deliveries at once.
 */
const CHAIN = 31337;
const C = `eip155-${CHAIN}`;
const KEY = "restart-key-0123456789";
const SECRET = "restart-secret-0123456789";

let anvil: AnvilInstance;
let work: WorkloadResult;
let dir: string;
let receiver: HookReceiver;
const children: ChildProcess[] = [];
/** Crashes in a row: one in npm test; three under npm run test:long (the reader, then the writer, then either). */
const ROUNDS = process.env.CHAINLAKE_CRASH_FULL === "1" ? 3 : 1;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts serve over the folder, the writer (--follow) or a reader beside it; resolves with its base URL. */
function serve(follow: boolean): Promise<{ base: string; child: ChildProcess }> {
	const child = spawnScript(
		"serve.ts",
		[
			...["--data-dir", dir, "--port", "0", "--rate-limit", "0", "--hook-allow-hosts", "127.0.0.1"],
			...(follow ? ["--follow", `${C}=${anvil.url}`, "--poll-ms", "100", "--finality-depth", "8"] : []),
		],
		{ CHAINLAKE_API_KEYS: KEY },
	);
	children.push(child);
	let out = "";
	return new Promise((resolve, reject) => {
		child.stdout?.on("data", (c) => {
			out += c;
			const m = /chainlake API on (http:\/\/[^\s:]+:\d+)/.exec(out);
			if (m?.[1]) resolve({ base: m[1], child });
		});
		child.stderr?.on("data", (c) => {
			out += c;
		});
		child.on("exit", (code, signal) => reject(new Error(`serve exited with ${code ?? signal}: ${out}`)));
	});
}

const call = async (base: string, path: string, init: { method?: string; body?: unknown } = {}) => {
	const r = await fetch(`${base}${path}`, {
		method: init.method ?? "GET",
		headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
		body: init.body === undefined ? undefined : JSON.stringify(init.body),
	});
	return {
		status: r.status,
		body: (await r.json()) as Record<string, unknown> & { items?: Record<string, unknown>[] },
	};
};

/** Every item of the query, as the list route answers it now. */
async function listed(base: string, wallet: string) {
	const items: Record<string, unknown>[] = [];
	for (let offset = ""; ; ) {
		const r = await call(
			base,
			`/${C}/v1/address/${wallet}/transfers?asset_type=native,ft,nft&limit=1000${offset ? `&offset=${offset}` : ""}`,
		);
		items.push(...(r.body.items ?? []));
		const range = r.body.range as { has_more: boolean; next_offset: string };
		if (!range.has_more) return items;
		offset = range.next_offset;
	}
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	work = await runWorkload({ rpcUrl: anvil.url });
	dir = await mkdtemp(join(tmpdir(), "chainlake-hooks-restart-"));
	receiver = await startHookReceiver(SECRET);
	receiver.allowDuplicates = true;
}, 60_000);

afterAll(async () => {
	// Each child stopped and gone before its folder is removed (a follower still writing would refill it).
	await Promise.all(
		children
			.filter((c) => c.exitCode === null && c.signalCode === null)
			.map((c) => new Promise((r) => c.once("exit", r).kill("SIGTERM"))),
	);
	await receiver?.close();
	await anvil?.stop();
	await rm(dir, { recursive: true, force: true });
});

describe("a webhook across a SIGKILL of the delivering process", () => {
	it("resumes from the durable cursor: nothing lost, duplicates only of the unacknowledged batch", async () => {
		const wallet = work.accounts.alice.toLowerCase();
		const pay = (wei: number) =>
			sendMined(anvil.url, { from: work.accounts.bob, to: wallet, value: `0x${wei.toString(16)}` });
		const [writer, reader] = await Promise.all([serve(true), serve(false)]);
		// The follower stores the workload's blocks first (a hook on a chain with none is a 503 NO_DATA).
		for (const p of [writer, reader])
			for (
				const end = Date.now() + 60_000;
				Date.now() < end && (await call(p.base, `/${C}/v1/blocks/latest`)).status !== 200;
			)
				await sleep(50);
		// Made through the reader; delivered by whichever process takes the chain's hooks lock first.
		const made = await call(reader.base, `/${C}/v1/hooks`, {
			method: "POST",
			body: {
				path: `/${C}/v1/address/${wallet}/transfers`,
				query: { asset_type: "native,ft,nft" },
				url: receiver.url,
				secret: SECRET,
			},
		});
		expect(made.status, JSON.stringify(made.body)).toBe(201);
		const id = made.body.id as string;
		for (const end = Date.now() + 60_000; Date.now() < end && receiver.batches.length === 0; ) await sleep(50);
		expect(receiver.batches.length).toBeGreaterThan(0);
		const lockPid = () => Number(readFileSync(join(dir, C, "_hooks", "_lock"), "utf8"));
		const live = { writer, reader };

		for (let round = 0; round < ROUNDS; round++) {
			// Answers held back: the next batch is applied at the receiver but unanswered when the kill comes.
			receiver.delayMs = 1500;
			const held = receiver.batches.length;
			await pay(7001 + 10 * round);
			for (const end = Date.now() + 30_000; Date.now() < end && receiver.batches.length === held; ) await sleep(20);
			expect(receiver.batches.length).toBe(held + 1);
			const role = (
				[
					["writer", live.writer],
					["reader", live.reader],
				] as const
			).find(([, p]) => p.child.pid === lockPid())?.[0];
			expect(role, "one of the two serve processes holds the hooks' lock").toBeDefined();
			const killed = live[role as "writer" | "reader"];
			killed.child.kill("SIGKILL");
			await new Promise((r) => killed.child.once("exit", r));
			const seen = receiver.batches.length;
			const unacknowledged = new Set(receiver.batches.at(-1));
			const before = new Set(receiver.items.keys());
			receiver.delayMs = 0;
			// Blocks keep coming while nothing delivers.
			for (let i = 1; i <= 3; i++) await pay(7001 + 10 * round + i);
			// The writer killed: started again (its follower stores the new blocks); a reader only when
			// another round needs two processes. The other process, or the new one, delivers from the
			// durable cursor.
			if (role === "writer") live.writer = await serve(true);
			else if (round + 1 < ROUNDS) live.reader = await serve(false);

			let want: Record<string, unknown>[] = [];
			const last = String(7001 + 10 * round + 3);
			for (const end = Date.now() + 60_000; Date.now() < end; ) {
				want = await listed(live.writer.base, wallet);
				if (want.some((t) => t.value === last) && receiver.items.size === want.length) break;
				await sleep(100);
			}
			const heldItems = [...receiver.items.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, v]) => v);
			expect(heldItems).toEqual(want);
			expect(want.map((t) => t.value)).toContain(last);
			// Sent again: only items of the batch the kill left unanswered.
			const again = receiver.batches
				.slice(seen)
				.flat()
				.filter((itemId) => before.has(itemId));
			expect(again.length).toBeGreaterThan(0);
			for (const itemId of again) expect(unacknowledged.has(itemId), itemId).toBe(true);
			// Another process holds the lock now, and never were two deliveries of the hook at the receiver at once.
			expect(lockPid()).not.toBe(killed.child.pid);
			expect([live.writer.child.pid, live.reader.child.pid]).toContain(lockPid());
			expect(receiver.maxInFlight).toBe(1);
			// Written just after the 2xx, so a moment after the receiver has the batch.
			let state: Record<string, unknown> = {};
			for (const end = Date.now() + 30_000; Date.now() < end; await sleep(50)) {
				state = (await call(live.writer.base, `/${C}/v1/hooks/${id}`)).body.delivery as Record<string, unknown>;
				if (state.last_delivered_block === Number(want.at(-1)?.block_number)) break;
			}
			expect(state).toMatchObject({ status: "active", attempts: 0 });
			expect(state.last_delivered_block).toBe(Number(want.at(-1)?.block_number));
		}
		expect(receiver.badSignatures).toBe(0);
	}, 240_000);
});
