import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { type AppOptions, buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { backfillInto } from "./anvil-chain.js";

export const TEST_KEY = "test-key-0123456789";
export const AUTH = { authorization: `Bearer ${TEST_KEY}` };

/**
 * A real API over real data: anvil runs the Solidity workload, the backfill writes Parquet into
 * a temp folder, and the Fastify app serves it (tests call it through app.inject).
 */
export async function startApiOnWorkload(
	opts: {
		chainId?: number;
		basePath?: string;
		/** More options for the app (rate limit, response cap, timeouts, logger). */
		app?: Partial<Omit<AppOptions, "store" | "keyring" | "dataDir">>;
	} = {},
) {
	const chainId = opts.chainId ?? 31337;
	const anvil: AnvilInstance = await startAnvil({ chainId });
	const work: WorkloadResult = await runWorkload({ rpcUrl: anvil.url });
	const dataDir = await mkdtemp(join(tmpdir(), "chainlake-api-"));
	// Without the Delta Lake logs: the API reads the Parquet files its manifest lists, never the
	// logs (test/store/delta-lake.test.ts and the writers' tests cover them), and writing them at
	// each manifest save was a quarter of this backfill's CPU (1.52 -> 1.14 s), in 20 test files.
	await backfillInto(dataDir, anvil.url, chainId, { partitionSize: 8, lake: { delta: false } });
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
			await anvil.stop();
			await rm(dataDir, { recursive: true, force: true });
		},
	};
}

export type ApiFixture = Awaited<ReturnType<typeof startApiOnWorkload>>;

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
