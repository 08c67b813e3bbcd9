import { readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { startStatusServer } from "../../src/api/status-server.js";
import { startFollowers } from "../../src/follow/followers.js";
import { readStatus } from "../../src/follow/status-file.js";
import { createStore } from "../../src/query/store/create-store.js";
import { manifestPath } from "../../src/store/format/layout.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * One writer, many readers over one data folder: a second follower of the same chain stands by
 * (no faults, ready, the writer's figures from its status file) and takes over when the writer
 * stops; an API process that does not follow shows the writer's figures in /readyz and
 * /metrics; the writer's own status port answers; a manifest saved again with the same size and
 * mtime is still seen (its generation).
 */
const CHAIN = `eip155-31337`;
let anvil: AnvilInstance;
let dir: string;
const logs = { writer: createMemoryLogger(), standby: createMemoryLogger() };
let writer: ReturnType<typeof startFollowers>;
let standby: ReturnType<typeof startFollowers>;

const follow = (logger: ReturnType<typeof createMemoryLogger>) =>
	startFollowers([{ chain: CHAIN, urls: [anvil.url] }], { dataDir: dir, logger, pollMs: 100, finalityDepth: 4 });
const until = async (what: string, ok: () => boolean | Promise<boolean>) => {
	for (const deadline = Date.now() + 15_000; !(await ok()); ) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 25));
	}
};
const stats = (f: ReturnType<typeof startFollowers>) => f.sources.get(CHAIN)?.stats;
async function api(followers: ReturnType<typeof startFollowers> | null) {
	const store = await createStore(dir, { memoryLimit: "256MB" });
	const app = await buildApp({
		store,
		keyring: createKeyring({ path: join(dir, "k.json"), envKeys: ["k"] }),
		dataDir: dir,
		followers: followers?.sources,
	});
	const close = async () => {
		await app.close();
		store.close();
	};
	return { store, app, close };
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: 31337 });
	const [from, to] = (await nodeCall(anvil.url, "eth_accounts")) as string[];
	for (let i = 0; i < 3; i++) await sendMined(anvil.url, { from: from as string, to: to as string, value: "0x1" });
	dir = await mkdtemp(join(tmpdir(), "chainlake-one-writer-"));
	writer = follow(logs.writer);
	await until("the writer's first step", () => stats(writer)?.lastStepAt != null);
	standby = follow(logs.standby);
	await until("the second follower to stand by", () => stats(standby)?.standby != null);
});

afterAll(async () => {
	await standby?.stop();
	await writer?.stop();
	await anvil?.stop();
	await rm(dir, { recursive: true, force: true });
});

describe("one writer, many readers", () => {
	it("a second follower stands by: no fault, said once, ready with the writer's figures", async () => {
		// Several polls later, still one line and no fault.
		await new Promise((r) => setTimeout(r, 500));
		expect(stats(standby)).toMatchObject({ faults: 0, lastFault: null, lastStepAt: null });
		expect(logs.standby.lines.filter((l) => l.includes("standing by"))).toHaveLength(1);
		expect(logs.standby.lines.filter((l) => /error/i.test(l))).toEqual([]);
		const { app, close } = await api(standby);
		try {
			const ready = await app.inject({ url: "/readyz" });
			expect(ready.statusCode, ready.body).toBe(200);
			const [chain] = ready.json().chains;
			const head = stats(writer)?.storedHead;
			expect(chain).toMatchObject({ chain: CHAIN, ready: true, head_block: head });
			expect(chain.follower).toMatchObject({
				writer: "another process",
				standby: true,
				status_file: { pid: process.pid, stale: false, stopped: false },
				node_head_block: stats(writer)?.nodeHead,
				blocks_ingested: stats(writer)?.blocksIngested,
				faults: 0,
			});
			const metrics = (await app.inject({ url: "/metrics", headers: { authorization: "Bearer k" } })).body;
			expect(metrics).toContain(`chainlake_node_head_block{chain="${CHAIN}"} ${stats(writer)?.nodeHead}`);
			expect(metrics).toContain(`chainlake_follow_faults_total{chain="${CHAIN}"} 0`);
		} finally {
			await close();
		}
	});

	it("an API process that does not follow shows the writer's status and figures, within its memory limit", async () => {
		const { store, app, close } = await api(null);
		try {
			// Its DuckDB holds to the memory limit it was given (each process its share).
			expect(await store.snapshot(CHAIN).query("SELECT current_setting('memory_limit') AS m")).toEqual([
				{ m: "244.1 MiB" },
			]);
			const chain = (await app.inject({ url: "/readyz" })).json().chains[0];
			expect(chain.ready).toBe(true);
			expect(chain.follower).toMatchObject({
				writer: "another process",
				standby: false,
				status_file: { stale: false },
			});
			// The file is the writer's figures as of its last step.
			const status = readStatus(dir, CHAIN);
			expect(status?.source.stats.storedHead).toBe(stats(writer)?.storedHead);
			expect((await app.inject({ url: "/metrics", headers: { authorization: "Bearer k" } })).body).toContain(
				`chainlake_blocks_ingested_total{chain="${CHAIN}"} ${status?.source.stats.blocksIngested}`,
			);
		} finally {
			await close();
		}
	});

	it("the writer's status port answers /readyz and /metrics", async () => {
		const { app, address } = await startStatusServer(writer.sources, dir, 0);
		try {
			const ready = await fetch(`${address}/readyz`);
			expect(ready.status).toBe(200);
			expect(((await ready.json()) as { chains: unknown[] }).chains[0]).toMatchObject({
				chain: CHAIN,
				ready: true,
				standby: null,
				stored_head_block: stats(writer)?.storedHead,
			});
			expect(await (await fetch(`${address}/metrics`)).text()).toContain(
				`chainlake_head_block{chain="${CHAIN}"} ${stats(writer)?.storedHead}`,
			);
			// The standby's own port says it is not the writer.
			const other = await startStatusServer(standby.sources, dir, 0);
			try {
				expect((await fetch(`${other.address}/readyz`)).status).toBe(503);
			} finally {
				await other.app.close();
			}
		} finally {
			await app.close();
		}
	});

	it("sees a manifest saved again with the same size and modification time (its generation)", async () => {
		const { store, close } = await api(null);
		try {
			const path = manifestPath(dir, CHAIN);
			// Stop both followers so the manifest holds still; the standby must not take over meanwhile.
			await standby.stop();
			await writer.stop();
			const text = readFileSync(path, "utf8");
			const m = JSON.parse(text);
			const head = store.snapshot(CHAIN).head();
			expect(head).toBe(Math.max(...m.chunks.map((c: { to: number }) => c.to)));
			// The same manifest less its newest chunk, one generation on (same digits), padded to the same size.
			const gen = m.generation as number;
			const next = gen % 10 === 9 ? gen - 1 : gen + 1;
			const top = m.chunks.reduce((a: { to: number }, c: { to: number }) => (c.to > a.to ? c : a));
			const smaller = { ...m, generation: next, chunks: m.chunks.filter((c: unknown) => c !== top) };
			let other = `${JSON.stringify(smaller, null, 1)}\n`;
			expect(other.length).toBeLessThan(text.length);
			other = other.replace(/\n$/, `${" ".repeat(text.length - other.length)}\n`);
			const when = Math.floor(statSync(path).mtimeMs / 1000) - 5;
			utimesSync(path, when, when);
			expect(store.snapshot(CHAIN).head()).toBe(head);
			writeFileSync(path, other);
			utimesSync(path, when, when);
			expect(statSync(path).size).toBe(Buffer.byteLength(text));
			expect(store.snapshot(CHAIN).head()).toBe(top.from - 1);
		} finally {
			await close();
		}
	});
});

describe("taking over", () => {
	it("a standby follower writes once the writer stops", async () => {
		writer = follow(logs.writer);
		await until("the writer's step", () => stats(writer)?.lastStepAt != null);
		standby = follow(logs.standby);
		await until("standing by", () => stats(standby)?.standby != null);
		await writer.stop();
		expect(readStatus(dir, CHAIN)?.stopped).toBe(true);
		await until(
			"the standby to take over",
			() => stats(standby)?.standby === null && stats(standby)?.lastStepAt != null,
		);
		expect(logs.standby.lines.some((l) => l.includes("took over writing"))).toBe(true);
		const [from, to] = (await nodeCall(anvil.url, "eth_accounts")) as string[];
		const n = await sendMined(anvil.url, { from: from as string, to: to as string, value: "0x2" });
		await until("the new block stored", () => (stats(standby)?.storedHead ?? -1) >= n);
		// (Rewritten at most once a second.)
		await until("the status file to show it", async () => readStatus(dir, CHAIN)?.source.stats.storedHead === n);
		expect(readStatus(dir, CHAIN)).toMatchObject({ stopped: false, pid: process.pid });
	});
});
