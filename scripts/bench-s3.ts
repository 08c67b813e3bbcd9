/**
 * The lake on object storage, timed: `npm run bench:s3 -- --data-dir <synth folder> [--work-dir
 * <folder>] [--rounds 2]`. Starts s3rver (an S3 server on the local disk, from npm) in
 * `--work-dir`, publishes the folder's chain to it as `npm run follow -- --publish-to` does
 * (timed), then asks a reader over the bucket every request of the mixed workload
 * (scripts/load/requests.ts) one at a time: first with an empty cache (cold: each request fetches
 * the files it reads), then again (warm), and a reader of the folder itself the same. Prints the
 * latency of each pass and what the cold pass fetched. The bucket is on this machine's disk:
 * a real bucket adds its network round trips and bandwidth to the cold pass.
 */
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import S3rver from "s3rver";
import { buildApp } from "../src/api/app.js";
import { createKeyring } from "../src/api/keys.js";
import { createStore } from "../src/query/store/create-store.js";
import type { Store } from "../src/query/store/store.js";
import { openBucket } from "../src/remote/bucket.js";
import { createPublisher } from "../src/remote/publisher.js";
import { openRemoteLake } from "../src/remote/remote-lake.js";
import type { SynthTargets } from "../src/synth/targets.js";
import { targetsPath } from "../src/synth/targets.js";
import { flagUsage, startCli, usageError } from "../src/util/cli.js";
import { mixedPaths } from "./load/requests.js";

const options = {
	"data-dir": { type: "string" },
	"work-dir": { type: "string", default: "/tmp/chainlake-bench-s3" },
	chain: { type: "string", default: "eip155-1" },
	rounds: { type: "string", default: "2" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage("npm run bench:s3 -- --data-dir <synth folder> [--work-dir <folder>] [--rounds 2]", options),
	}),
	options,
});
if (!values["data-dir"]) {
	usageError("--data-dir is required: a synthetic chain (npm run synth)");
}
const dataDir = values["data-dir"];
const chain = values.chain as string;
const work = values["work-dir"] as string;
const KEY = "bench-s3-key-0001";
Object.assign(process.env, { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" });
const targets = JSON.parse(readFileSync(targetsPath(dataDir, chain), "utf8")) as SynthTargets;
const paths = mixedPaths(targets).map((p) => `/${chain}/v1${p}`);

await rm(work, { recursive: true, force: true });
await mkdir(work, { recursive: true });
const server = new S3rver({
	port: 0,
	address: "127.0.0.1",
	silent: true,
	directory: join(work, "bucket"),
	configureBuckets: [{ name: "lake", configs: [] }],
});
const { port } = (await server.run()) as { port: number };
const endpoint = `http://127.0.0.1:${port}`;
const url = "s3://lake/bench";

let t = performance.now();
const publisher = createPublisher(openBucket(url, { endpoint }), dataDir, chain);
await publisher.publish();
process.stdout.write(
	`published ${publisher.stats.uploaded} files in ${((performance.now() - t) / 1000).toFixed(1)} s (s3rver on the local disk)\n`,
);

async function pass(name: string, store: Store, dir: string) {
	const app = await buildApp({
		store,
		keyring: createKeyring({ path: join(dir, "_keys.json"), envKeys: [KEY] }),
		dataDir: dir,
		rateLimit: { perSecond: 0, burst: 0 },
	});
	const ms: number[] = [];
	const bad: string[] = [];
	for (const path of paths) {
		t = performance.now();
		const res = await app.inject({ url: path, headers: { authorization: `Bearer ${KEY}` } });
		ms.push(performance.now() - t);
		if (res.statusCode !== 200) bad.push(`${res.statusCode} ${path}`);
	}
	await app.close();
	ms.sort((a, b) => a - b);
	const q = (f: number) => (ms[Math.min(ms.length - 1, Math.floor(f * ms.length))] as number).toFixed(1);
	const total = ms.reduce((a, b) => a + b, 0) / 1000;
	process.stdout.write(
		`${name}: ${paths.length} requests one at a time, p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${q(1)} ms, total ${total.toFixed(1)} s${bad.length ? `; not 200: ${bad.join(", ")}` : ""}\n`,
	);
}

const local = await createStore(dataDir);
await pass("folder reader", local, dataDir);
local.close();
const cache = await mkdtemp(join(work, "cache-"));
const lake = await openRemoteLake({
	url,
	cacheDir: cache,
	cacheBytes: 100 * 2 ** 30,
	pollMs: 1000,
	endpoint,
	logger: console,
});
const remote = await createStore(cache, { files: lake.files });
for (let round = 1; round <= Number(values.rounds); round++) {
	await pass(round === 1 ? "S3 reader, cold cache" : `S3 reader, warm cache (pass ${round})`, remote, cache);
	const s = lake.files.stats();
	process.stdout.write(
		`  cache after pass ${round}: ${s.files} files, ${(s.bytes / 2 ** 20).toFixed(1)} MiB (of the folder's files fetched: ${s.misses} fetches, ${(s.fetchedBytes / 2 ** 20).toFixed(1)} MiB), ${s.hits} hits\n`,
	);
}
remote.close();
await lake.stop();
await server.close();
await rm(work, { recursive: true, force: true });
