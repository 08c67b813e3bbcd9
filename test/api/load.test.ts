import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceProcess, startService } from "../../scripts/bench/server.js";
import { type LoadResult, runLoad } from "../../scripts/load/load.js";
import { mixedPaths } from "../../scripts/load/requests.js";
import { DEFAULT_TIMEOUTS } from "../../src/api/server-timeouts.js";
import type { Scale } from "../../src/synth/scales.js";
import { writeSynthChain } from "../../src/synth/synth.js";
import { computeTargets } from "../../src/synth/targets.js";
import { parseChainId } from "../../src/util/chain.js";
import { deadUrl } from "../helpers/scripted-rpc.js";

/**
 * The fast version of the load test (`npm run soak` runs the long one, 60 s on dataset M): 200
 * concurrent clients on the mixed workload for a few seconds, against the real service process
 * (scripts/serve.ts, rate limits off) over a small synthetic chain on disk. Every request must be
 * answered 200, none may error or time out, and the service's memory must stay bounded.
 */
// 1500 blocks in 6 chunks (3000 in 6 before: writing them took 24 s of CPU, most of the file's;
// 1500 take 15 s): half the rows, the same ramp, tiers of wallets and chunk layout.
const SCALE: Scale = { blocks: 1500, accounts: 5000, contracts: 100, factories: 5, partitionSize: 250 };
const CHAIN = parseChainId("eip155-1");
const KEY = "load-test-key";
const CLIENTS = 200;
const SECONDS = Number(process.env.CHAINLAKE_LOAD_SECONDS ?? 6);

let root: string;
let service: ServiceProcess;
let result: LoadResult;
let paths: string[];

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), "chainlake-load-"));
	await writeSynthChain({ scale: SCALE, chain: CHAIN, dataDir: root, partitionSize: SCALE.partitionSize });
	const targets = await computeTargets(root, CHAIN.id);
	paths = mixedPaths(targets).map((p) => `/${CHAIN.id}/v1${p}`);
	// A port of our own for the service process (it must be known before it listens): one the
	// system just gave out as free (a random pick could land on another test's connection).
	service = await startService(root, Number(new URL(await deadUrl()).port), KEY);
	result = await runLoad({
		base: service.base,
		key: KEY,
		paths,
		connections: CLIENTS,
		seconds: SECONDS,
		pid: service.pid,
	});
	console.log(
		`load: ${CLIENTS} clients, ${SECONDS} s, ${result.requests} requests (${result.requestsPerSecond.toFixed(0)}/s), p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms, max ${result.latencyMs.max} ms, RSS ${(Math.max(...result.rssSamples) / 2 ** 20).toFixed(0)} MiB (growth ${(result.rssGrowth * 100).toFixed(1)}%)`,
	);
}, 180_000);
afterAll(async () => {
	await service?.stop();
	await rm(root, { recursive: true, force: true });
});

describe(`${CLIENTS} concurrent clients on the mixed workload`, () => {
	it("asks every kind of question: wallets of each tier, hashes, blocks, factories, tokens", () => {
		for (const part of [
			"/transfers?",
			"/txs?",
			"/txs/0x",
			"/blocks/0x",
			"/blocks/latest",
			"/contracts/creates",
			"/contract/",
		])
			expect(
				paths.some((p) => p.includes(part)),
				part,
			).toBe(true);
		expect(paths.length).toBeGreaterThan(30);
	});

	it("every request is answered 200: no error, no timeout, no other status", () => {
		// Requests still in flight when the run ends are not counted either way.
		expect(result.requests).toBeGreaterThan(0);
		expect(result.errors).toBe(0);
		expect(result.timeouts).toBe(0);
		expect(result.non2xx).toBe(0);
		expect(Object.keys(result.statuses)).toEqual(["200"]);
	});

	it("latency stays bounded and memory with it", () => {
		// Far below the server's own 30 s request deadline: no request waited its way to a 503.
		expect(result.latencyMs.max).toBeLessThan(15_000);
		expect(Math.max(...result.rssSamples)).toBeLessThan(1.5 * 2 ** 30);
	});
});

describe("a connection past the service's requests per socket", () => {
	it("is reconnected by the load, as clients do, so no answer is a 503", async () => {
		// The service's last answer on a socket (maxRequestsPerSocket) says Connection: close and
		// later requests on it get 503; autocannon alone kept the socket and counted them.
		const cap = DEFAULT_TIMEOUTS.maxRequestsPerSocket;
		const r = await runLoad({
			base: service.base,
			key: KEY,
			paths: [`/${CHAIN.id}/v1/blocks/latest`],
			connections: 1,
			seconds: 60,
			requests: Math.round(2.5 * cap),
			pid: service.pid,
		});
		expect(r.requests).toBeGreaterThan(2 * cap);
		expect(r.statuses).toEqual({ "200": r.requests });
	}, 90_000);
});
