import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { openBucket } from "../../src/remote/bucket.js";
import { createPublisher } from "../../src/remote/publisher.js";
import { openRemoteLake, type RemoteLake } from "../../src/remote/remote-lake.js";
import { manifestPath } from "../../src/store/format/layout.js";
import type { Manifest } from "../../src/store/format/records.js";
import { listedPaths } from "../../src/store/indexes/listing.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import type { WorkloadResult } from "../../src/workload/types.js";
import { spawnScript } from "../helpers/cli.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * The lake on object storage: `npm run follow -- --publish-to s3://...` follows anvil through
 * new blocks, reorgs 1 and 3 deep and compactions, publishing to an S3 server (s3rver, from npm:
 * a real S3 HTTP API on the local disk, standing in for AWS, which this machine cannot reach);
 * API readers over the bucket (`--data-url`) answer during the run, and once the chain holds
 * still answer exactly as a reader of the writer's folder does, with a cache big enough for
 * everything and with one so small that it evicts as it goes. The publisher deletes files it
 * stopped listing only after the retention.
 */
const CHAIN = "eip155-31337";
const KEY = "s3-test-key-0001";
const S3_ENV = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1" };
let anvil: AnvilInstance;
let workload: WorkloadResult;
let dir: string;
let server: S3rver;
let endpoint: string;
let writer: ChildProcess;
let output = "";
const readers: { lake: RemoteLake; store: Store; app: Awaited<ReturnType<typeof buildApp>>; cache: string }[] = [];

const until = async (what: string, ok: () => Promise<boolean>, ms = 60_000) => {
	for (const deadline = Date.now() + ms; ; ) {
		if (await ok().catch(() => false)) return;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; writer output:\n${output}`);
		await new Promise((r) => setTimeout(r, 100));
	}
};
const nodeHead = async () => Number(await nodeCall(anvil.url, "eth_blockNumber"));
const localManifest = () => JSON.parse(readFileSync(manifestPath(dir, CHAIN), "utf8")) as Manifest;

async function reader(cacheBytes: number) {
	const cache = await mkdtemp(join(tmpdir(), "chainlake-s3-cache-"));
	const lake = await openRemoteLake({
		url: "s3://lake/mainnet",
		cacheDir: cache,
		cacheBytes,
		pollMs: 100,
		endpoint,
		logger: console,
	});
	const store = await createStore(cache, { files: lake.files });
	const app = await buildApp({
		store,
		keyring: createKeyring({ path: join(cache, "_keys.json"), envKeys: [KEY] }),
		dataDir: cache,
		remote: lake,
		rateLimit: { perSecond: 0, burst: 0 },
	});
	const r = { lake, store, app, cache };
	readers.push(r);
	return r;
}
const ask = (app: Awaited<ReturnType<typeof buildApp>>, url: string) =>
	app.inject({ url, headers: { authorization: `Bearer ${KEY}` } });

beforeAll(async () => {
	Object.assign(process.env, S3_ENV);
	anvil = await startAnvil({ chainId: 31337 });
	workload = await runWorkload({ rpcUrl: anvil.url });
	dir = await mkdtemp(join(tmpdir(), "chainlake-s3-"));
	server = new S3rver({
		port: 0,
		address: "127.0.0.1",
		silent: true,
		directory: join(dir, "..", `${dir.split("/").at(-1)}-bucket`),
		configureBuckets: [{ name: "lake", configs: [] }],
	});
	const { port } = (await server.run()) as { port: number };
	endpoint = `http://127.0.0.1:${port}`;
	writer = spawnScript(
		"follow.ts",
		[
			...["--follow", `${CHAIN}=${anvil.url}`, "--data-dir", dir, "--poll-ms", "100"],
			...["--finality-depth", "4", "--partition-size", "8", "--delete-grace-ms", "30000"],
			...["--publish-to", "s3://lake/mainnet", "--s3-endpoint", endpoint],
		],
		S3_ENV,
	);
	for (const stream of [writer.stdout, writer.stderr])
		stream?.on("data", (c) => {
			output += c;
		});
}, 180_000);

afterAll(async () => {
	for (const r of readers) {
		await r.app.close();
		r.store.close();
		await r.lake.stop();
		await rm(r.cache, { recursive: true, force: true });
	}
	if (writer && writer.exitCode === null) writer.kill("SIGKILL");
	await server?.close();
	await anvil?.stop();
	if (dir) {
		await rm(dir, { recursive: true, force: true });
		await rm(join(dir, "..", `${dir.split("/").at(-1)}-bucket`), { recursive: true, force: true });
	}
});

describe("the lake on object storage (S3, s3rver)", () => {
	it("a reader over the bucket answers through reorgs and compactions, then exactly as a reader of the folder", async () => {
		const { alice, bob, carol } = workload.accounts;
		const big = await reader(10 * 2 ** 30);
		// Smaller than the files one answer reads: every query evicts what the last one fetched.
		const tiny = await reader(64 * 1024);
		const servedHead = async (r: typeof big) => {
			await r.lake.syncNow();
			const res = await ask(r.app, `/${CHAIN}/v1/blocks/latest`);
			return res.statusCode === 200 ? (res.json() as { number: number }).number : -1;
		};
		for (const r of [big, tiny])
			await until("the workload published", async () => (await servedHead(r)) === (await nodeHead()), 120_000);

		const tokens = `/balances/${CHAIN}/v1`;
		const paths = [
			`/${CHAIN}/v1/blocks/latest`,
			`/${CHAIN}/v1/blocks?block_number_start=0&block_number_end=latest&limit=100`,
			...[alice, bob, carol].flatMap((a) => [
				`/${CHAIN}/v1/address/${a}/transfers?asset_type=native,ft,nft&limit=100`,
				`/${CHAIN}/v1/address/${a}/txs?limit=100`,
				`${tokens}/addresses/${a}/tokens`,
			]),
			`/${CHAIN}/v1/txs/${workload.txs[3]?.hash}`,
			`/${CHAIN}/v1/contract/${workload.contracts.token20}/transfers?asset_type=ft`,
			`${tokens}/tokens/${workload.contracts.token20}/holders?limit=100`,
		];

		// The chain moves (reorgs 1 and 3 deep, then blocks enough to compact the head's files)
		// while both readers answer.
		const statuses: { path: string; status: number }[] = [];
		let driving = true;
		const driver = (async () => {
			try {
				const send = (v: number) => sendMined(anvil.url, { from: alice, to: bob, value: `0x${v.toString(16)}` });
				const published = async () => {
					const h = await nodeHead();
					await until(`block ${h} over S3`, async () => (await servedHead(big)) === h);
				};
				for (let i = 1; i <= 3; i++) await send(i);
				await published();
				for (const depth of [1, 3]) {
					await nodeCall(anvil.url, "anvil_reorg", [depth, []]);
					await send(100 + depth);
					await published();
				}
				for (let i = 0; i < 20; i++) await send(200 + i);
				// The head's one-block files compacted into a partition (finality 4, partitions of 8).
				await until("a compaction", async () =>
					localManifest().chunks.some((c) => c.from > workload.lastBlock && c.to - c.from + 1 >= 8),
				);
				await send(300);
				await published();
			} finally {
				driving = false;
			}
		})();
		const load = (async () => {
			for (let i = 0; driving; i++) {
				// Back to the event loop between requests, as a client over a socket is: an answer
				// that needs no I/O (a 503) resolves inject() in microtasks alone, and a loop of them
				// would starve every timer (the sync, the driver, the test's timeout) and hold every
				// answer in memory until the worker runs out of heap (CI: "Worker exited unexpectedly").
				await new Promise((r) => setImmediate(r));
				const path = paths[i % paths.length] as string;
				for (const r of [big, tiny]) statuses.push({ path, status: (await ask(r.app, path)).statusCode });
			}
		})();
		await Promise.all([driver, load]);
		expect(statuses.length).toBeGreaterThan(20);
		expect(statuses.filter((s) => s.status !== 200)).toEqual([]);
		// The writer went through both reorgs.
		expect(output.match(/reorg/gi)?.length ?? 0, output).toBeGreaterThanOrEqual(2);

		// Held still: the writer stopped (it publishes once more as it stops; running, it may still
		// save metadata or ranks of a range that just settled), the bucket's manifest is the
		// folder's, and every answer is the folder reader's.
		writer.kill("SIGTERM");
		expect(await new Promise((r) => writer.once("exit", (c) => r(c))), output).toBe(0);
		await until("the last state published", async () => {
			await big.lake.syncNow();
			await tiny.lake.syncNow();
			const there = JSON.parse(readFileSync(manifestPath(big.cache, CHAIN), "utf8")) as Manifest;
			const small = JSON.parse(readFileSync(manifestPath(tiny.cache, CHAIN), "utf8")) as Manifest;
			return there.generation === localManifest().generation && small.generation === there.generation;
		});
		const local = await createStore(dir);
		const app = await buildApp({
			store: local,
			keyring: createKeyring({ path: join(dir, "k.json"), envKeys: [KEY] }),
			dataDir: dir,
		});
		try {
			for (const path of paths) {
				const ours = await ask(app, path);
				expect(ours.statusCode, path).toBe(200);
				for (const r of [big, tiny]) {
					const theirs = await ask(r.app, path);
					expect(theirs.statusCode, path).toBe(200);
					expect(theirs.json(), path).toEqual(ours.json());
				}
			}
		} finally {
			await app.close();
			local.close();
		}
		// The big cache fetched each file once; the tiny one kept within its size between queries.
		const b = big.lake.status().cache;
		const t = tiny.lake.status().cache;
		console.log(`s3: ${statuses.length} requests during the run; caches`, JSON.stringify({ big: b, tiny: t }));
		expect(b.evicted).toBe(0);
		expect(b.hits).toBeGreaterThan(b.misses);
		expect(t.evicted).toBeGreaterThan(0);
		expect(t.bytes).toBeLessThanOrEqual(t.maxBytes);
		const ready = await ask(big.app, "/readyz");
		expect(ready.statusCode).toBe(200);
		expect(ready.json()).toMatchObject({ ready: true, lake: { url: "s3://lake/mainnet", problem: null } });
	}, 300_000);

	it("keeps files the manifest stopped listing in the bucket for the retention, then deletes them", async () => {
		// (The writer stopped in the test above.)
		expect(writer.exitCode, output).toBe(0);
		const bucket = openBucket("s3://lake/mainnet", { endpoint });
		try {
			const m = localManifest();
			const live = new Set([...listedPaths(dir, m)].map((p) => p.slice(dir.length + 1)));
			const before = await bucket.list(CHAIN);
			// Every listed file is up, and the reorgs and compactions left replaced files beside them.
			for (const p of live) expect(before).toContain(p);
			const replaced = before.filter((p) => !live.has(p) && p.endsWith(".parquet"));
			expect(replaced.length).toBeGreaterThan(0);
			// A publisher started now (a restart) counts the retention from now.
			const publisher = createPublisher(bucket, dir, CHAIN, { retentionMs: 60_000 });
			const now = Date.now();
			await publisher.publish(now);
			await publisher.publish(now + 59_000);
			expect(await bucket.list(CHAIN)).toEqual(before);
			await publisher.publish(now + 60_000);
			const after = await bucket.list(CHAIN);
			for (const p of live) expect(after).toContain(p);
			for (const p of replaced) expect(after).not.toContain(p);
			expect(publisher.stats.deleted).toBeGreaterThanOrEqual(replaced.length);
		} finally {
			bucket.close();
		}
	}, 60_000);

	it("a manifest fetched cut short is not taken: the reader keeps the last whole one, says so, and takes the next", async () => {
		const r = readers[0];
		if (!r) throw new Error("the first test made no reader");
		const bucket = openBucket("s3://lake/mainnet", { endpoint });
		try {
			const whole = readFileSync(manifestPath(dir, CHAIN), "utf8");
			const before = readFileSync(manifestPath(r.cache, CHAIN), "utf8");
			// What a non-atomic server or a transfer cut short hands over.
			await bucket.put(`${CHAIN}/_manifest.json`, { bytes: whole.slice(0, 200) });
			await r.lake.syncNow();
			expect(readFileSync(manifestPath(r.cache, CHAIN), "utf8")).toBe(before);
			expect(r.lake.status().problem).toMatch(/_manifest\.json as fetched: it is not whole JSON/);
			expect((await ask(r.app, `/${CHAIN}/v1/blocks/latest`)).statusCode).toBe(200);
			// The same again: fetched again (its ETag was not kept), still refused.
			await r.lake.syncNow();
			expect(r.lake.status().sync_failures).toBeGreaterThanOrEqual(2);
			// Whole again, under a new generation: taken.
			const m = JSON.parse(whole) as Manifest;
			const next = JSON.stringify({ ...m, generation: (m.generation ?? 0) + 1 });
			await bucket.put(`${CHAIN}/_manifest.json`, { bytes: next });
			await r.lake.syncNow();
			expect(r.lake.status().problem).toBeNull();
			expect(readFileSync(manifestPath(r.cache, CHAIN), "utf8")).toBe(next);
			expect((await ask(r.app, `/${CHAIN}/v1/blocks/latest`)).statusCode).toBe(200);
		} finally {
			bucket.close();
		}
	}, 60_000);
});
