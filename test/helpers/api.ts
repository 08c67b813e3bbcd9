import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { type AppOptions, buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { TEMPLATE_ENV, WORK_FILE, WORKLOAD_CHAIN } from "../setup/workload-template.js";
import { backfillInto } from "./anvil-chain.js";

export const TEST_KEY = "test-key-0123456789";
export const AUTH = { authorization: `Bearer ${TEST_KEY}` };

/** The app's options a test may set beside the chain's data. */
type FixtureOptions = {
	basePath?: string;
	/** More options for the app (rate limit, response cap, timeouts, logger). */
	app?: Partial<Omit<AppOptions, "store" | "keyring" | "dataDir">>;
};

/**
 * A real API over real data: the Solidity workload's chain (anvil ran it and the backfill wrote
 * its Parquet once a run, test/setup/workload-template.ts), copied into a temp folder, and the
 * Fastify app serving it (tests call it through app.inject). For tests that only read that chain;
 * one that talks to the node afterwards takes startApiOnNode.
 */
export async function startApiOnWorkload(opts: FixtureOptions = {}) {
	const template = process.env[TEMPLATE_ENV];
	if (!template) throw new Error(`${TEMPLATE_ENV} is unset: test/setup/workload-template.ts is vitest's global setup`);
	const dataDir = await mkdtemp(join(tmpdir(), "chainlake-api-"));
	await cp(join(template, "data"), dataDir, { recursive: true });
	const work = JSON.parse(await readFile(join(template, WORK_FILE), "utf8"), (_k, v) =>
		v && typeof v === "object" && typeof v.$big === "string" ? BigInt(v.$big) : v,
	) as WorkloadResult;
	return serveFixture(WORKLOAD_CHAIN, work, dataDir, opts, undefined);
}

/**
 * The same on a live node of its own (chain `chainId`): anvil runs the workload, the backfill
 * writes it, and the node stays up for the test to send more blocks, read traces, or backfill again.
 */
export async function startApiOnNode(opts: FixtureOptions & { chainId?: number } = {}) {
	const chainId = opts.chainId ?? WORKLOAD_CHAIN;
	const anvil: AnvilInstance = await startAnvil({ chainId });
	const work: WorkloadResult = await runWorkload({ rpcUrl: anvil.url });
	const dataDir = await mkdtemp(join(tmpdir(), "chainlake-api-"));
	// Without the Delta Lake logs: the API reads the Parquet files its manifest lists, never the
	// logs (test/store/delta-lake.test.ts and the writers' tests cover them), and writing them at
	// each manifest save was a quarter of this backfill's CPU (1.52 -> 1.14 s).
	await backfillInto(dataDir, anvil.url, chainId, { partitionSize: 8, lake: { delta: false } });
	return serveFixture(chainId, work, dataDir, opts, anvil);
}

async function serveFixture<A extends AnvilInstance | undefined>(
	chainId: number,
	work: WorkloadResult,
	dataDir: string,
	opts: FixtureOptions,
	anvil: A,
) {
	const store = await createStore(dataDir);
	const app: FastifyInstance = await buildApp({
		store,
		keyring: createKeyring({ path: join(dataDir, "_keys.json"), envKeys: [TEST_KEY] }),
		dataDir,
		basePath: opts.basePath,
		...opts.app,
	});
	return {
		anvil,
		work,
		dataDir,
		store,
		app,
		chain: `eip155-${chainId}`,
		/** GET with the test key; returns status, parsed JSON body and headers. */
		async get(path: string, headers: Record<string, string> = AUTH) {
			const res = await app.inject({ method: "GET", url: path, headers });
			let body: unknown;
			try {
				body = res.json();
			} catch {
				body = res.body;
			}
			return {
				status: res.statusCode,
				body: body as Record<string, unknown> & { items?: Record<string, unknown>[] },
				headers: res.headers,
				raw: res.body,
			};
		},
		async close() {
			await app.close();
			store.close();
			await anvil?.stop();
			await rm(dataDir, { recursive: true, force: true });
		},
	};
}

export type ApiFixture = Awaited<ReturnType<typeof startApiOnWorkload>>;
export type NodeApiFixture = Awaited<ReturnType<typeof startApiOnNode>>;

/** The app over an existing folder, with key `key` (keys file `keysPath`); close() closes app and store. */
export async function serveFolder(dataDir: string, keysPath: string, key: string = TEST_KEY) {
	const store = await createStore(dataDir);
	const app: FastifyInstance = await buildApp({
		store,
		keyring: createKeyring({ path: keysPath, envKeys: [key] }),
		dataDir,
	});
	return {
		app,
		async close() {
			await app.close();
			store.close();
		},
	};
}
