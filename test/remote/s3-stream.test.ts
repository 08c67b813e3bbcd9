import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manifestPath } from "../../src/store/format/layout.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import type { WorkloadResult } from "../../src/workload/types.js";
import { spawnScript } from "../helpers/cli.js";
import { manifestTime, spread, storedAt } from "../helpers/manifest-times.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";
import { listedItems, type ServeProcess, startServe } from "../helpers/serve-process.js";
import { appliedItems, openSse } from "../helpers/sse.js";

/**
 * A stream over a lake on S3 (issue 29 "in every deployment"): `npm run follow -- --publish-to`
 * publishes to s3rver (a real S3 HTTP API from npm, standing in for AWS), `serve --data-url`
 * reads the bucket, syncing the manifest into its cache folder by a rename, where the stream's
 * head watcher sees it. A wallet's transfers streamed from the head: the items of blocks
 * published after the stream opened arrive, exactly the reader's list route's. Printed: block
 * mined → writer's commit → manifest in the reader's cache → item (writer and reader poll every
 * 100 ms: the node, the publisher's uploads, the bucket; the reader's streams poll only every 10 s,
 * so an item soon after the sync shows the watcher saw its rename).
 * Opt-in with the cluster tests (`npm run test:cluster`, CHAINLAKE_CLUSTER=1; CI runs it): about
 * 20 s, most of it publishing the workload, too long for npm test.
 */
const ENABLED = process.env.CHAINLAKE_CLUSTER === "1";
const CHAIN = "eip155-31337";
const KEY = "s3-stream-key-0001";
const AUTH = { authorization: `Bearer ${KEY}` };
const S3_ENV = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1" };
let anvil: AnvilInstance;
let workload: WorkloadResult;
let dir: string;
let server: S3rver;
let writer: ChildProcess;
let reader: ServeProcess;
let output = "";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 60_000) {
	for (const deadline = Date.now() + ms; ; await sleep(20)) {
		if (await Promise.resolve(ok()).catch(() => false)) return;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output:\n${output}${reader?.output()}`);
	}
}

beforeAll(async () => {
	if (!ENABLED) return;
	anvil = await startAnvil({ chainId: 31337 });
	workload = await runWorkload({ rpcUrl: anvil.url });
	dir = await mkdtemp(join(tmpdir(), "chainlake-s3-stream-"));
	server = new S3rver({
		port: 0,
		address: "127.0.0.1",
		silent: true,
		directory: join(dir, "bucket"),
		configureBuckets: [{ name: "lake", configs: [] }],
	});
	const { port } = (await server.run()) as { port: number };
	const endpoint = `http://127.0.0.1:${port}`;
	writer = spawnScript(
		"follow.ts",
		[
			...["--follow", `${CHAIN}=${anvil.url}`, "--data-dir", join(dir, "lake"), "--poll-ms", "100"],
			...["--publish-to", "s3://lake/mainnet", "--s3-endpoint", endpoint],
		],
		S3_ENV,
	);
	for (const s of [writer.stdout, writer.stderr]) s?.on("data", (c) => (output += c));
	reader = await startServe(
		[
			...["--data-url", "s3://lake/mainnet", "--s3-endpoint", endpoint, "--cache-dir", join(dir, "cache")],
			// The streams' poll (and heartbeat) slowed to 10 s and more: an item within 2 s of the sync
			// shows the head watcher saw the sync's rename in the cache folder.
			...["--poll-ms", "100", "--stream-poll-ms", "10000"],
		],
		{ ...S3_ENV, CHAINLAKE_API_KEYS: KEY },
	);
}, 120_000);

afterAll(async () => {
	await reader?.stop();
	if (writer && writer.exitCode === null) writer.kill("SIGKILL");
	await server?.close();
	await anvil?.stop();
	if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!ENABLED)("a stream over a lake on S3", () => {
	it("gets the items of blocks published after it opened, as the list route answers them", async () => {
		const tip = Number(await nodeCall(anvil.url, "eth_blockNumber"));
		const latest = async () =>
			(
				(await (await fetch(`${reader.base}/${CHAIN}/v1/blocks/latest`, { headers: AUTH })).json()) as {
					number: number;
				}
			).number;
		await until("the workload published and read back", async () => (await latest()) === tip, 90_000);
		const wallet = workload.accounts.alice.toLowerCase();
		const path = `${reader.base}/${CHAIN}/v1/address/${wallet}/transfers?asset_type=native,ft,nft&block_number_start=${tip}&block_number_end=latest`;
		const stream = openSse(path, AUTH);
		await until("the stream at the head", () =>
			stream.events.some((e) => e.event === "head" && JSON.parse(e.data).scanned_through === tip),
		);
		const written = manifestPath(join(dir, "lake"), CHAIN);
		const cached = manifestPath(join(dir, "cache"), CHAIN);
		const lag = { commit: [] as number[], synced: [] as number[], item: [] as number[], total: [] as number[] };
		for (let v = 1; v <= 4; v++) {
			const [w0, c0] = [manifestTime(written), manifestTime(cached)];
			const value = String(6600 + v);
			const block = await sendMined(anvil.url, {
				from: workload.accounts.bob,
				to: wallet,
				value: `0x${Number(value).toString(16)}`,
			});
			const mined = Date.now();
			const [commit, synced] = await Promise.all([storedAt(written, block, w0), storedAt(cached, block, c0)]);
			const mine = (data: string) => JSON.parse(data).value === value;
			await until(`the item of block ${block}`, () => stream.events.some((e) => e.event === "item" && mine(e.data)));
			const at = stream.times[stream.events.findIndex((e) => e.event === "item" && mine(e.data))] as number;
			lag.commit.push(commit - mined);
			lag.synced.push(synced - commit);
			lag.item.push(at - synced);
			lag.total.push(at - mined);
		}
		const last = Number(await nodeCall(anvil.url, "eth_blockNumber"));
		await until("the stream at the last block", () =>
			stream.events.some((e) => e.event === "head" && JSON.parse(e.data).scanned_through === last),
		);
		stream.close();
		expect(Math.max(...lag.item), "the cached manifest's rename woke the stream").toBeLessThan(2000);
		const got = appliedItems(stream.events);
		expect(got).toEqual(await listedItems(path, AUTH));
		expect(got.filter((t) => Number(t.block_number) > tip).map((t) => t.value)).toEqual([
			"6601",
			"6602",
			"6603",
			"6604",
		]);
		console.log(
			`stream over S3 (s3rver; writer and reader --poll-ms 100): mined -> item ${spread(lag.total)}; ` +
				`of which mined -> writer's commit ${spread(lag.commit)}; commit -> manifest in the reader's cache ${spread(lag.synced)}; ` +
				`cache manifest -> item ${spread(lag.item)}`,
		);
	}, 120_000);
});
