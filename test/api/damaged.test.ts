import { readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import { partitionFileName } from "../../src/store/format/layout.js";
import type { ChunkEntry, Manifest } from "../../src/store/format/records.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { AUTH, type NodeApiFixture, startApiOnNode, TEST_KEY } from "../helpers/api.js";

/**
 * A listed file missing or cut short is never a 500: requests reading it answer 503 DATA_DAMAGED
 * naming the blocks and the repair, others answer as usual, /readyz names the files (relative to
 * the data folder), and once the backfill has repaired them all is as before. A damaged manifest
 * is a 503 MANIFEST_DAMAGED, not "no blocks stored yet".
 */
const TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
let api: NodeApiFixture;
let V1: string;
const manifestFile = () => join(api.dataDir, api.chain, "_manifest.json");
const manifest = () => JSON.parse(readFileSync(manifestFile(), "utf8")) as Manifest;
const chunkAt = (from: number) => manifest().chunks.find((c) => c.from === from) as ChunkEntry;
const fileOf = (dataset: string, c: ChunkEntry) => join(api.dataDir, api.chain, dataset, partitionFileName(dataset, c));
const blocks = (a: number, b: number) => `${V1}/blocks?block_number_start=${a}&block_number_end=${b}`;
const events = (a: number, b: number) =>
	`${V1}/events?topic_0=${TRANSFER}&block_number_start=${a}&block_number_end=${b}`;
/** Nothing in an answer names a file, the data folder or SQL. */
const leaks = /\.parquet|_manifest|read_parquet|SELECT|\/tmp\/|chainlake-api-/;

beforeAll(async () => {
	api = await startApiOnNode();
	V1 = `/${api.chain}/v1`;
}, 120_000);
afterAll(async () => {
	await api?.close();
});

async function readyz() {
	const r = await api.app.inject({ method: "GET", url: "/readyz" });
	return {
		raw: r.body,
		chain: (r.json() as { chains: Record<string, unknown>[] }).chains[0] as Record<string, unknown>,
	};
}

describe("damaged data files", () => {
	it("answer 503 DATA_DAMAGED on the blocks they hold, 200 elsewhere, are named by /readyz, and the backfill repairs them", async () => {
		const before = {
			blocks: await api.get(blocks(8, 15)),
			events: await api.get(events(16, 23)),
		};
		expect(before.blocks.status).toBe(200);
		expect(before.events.status).toBe(200);
		expect(before.events.body.items?.length).toBeGreaterThan(0);
		expect((await readyz()).chain.damaged_files).toEqual([]);

		// After the store has checked them once: seen by the queries that fail on them.
		const [a, b] = [chunkAt(8), chunkAt(16)];
		truncateSync(fileOf("blocks", a), Math.floor(statSync(fileOf("blocks", a)).size / 2));
		rmSync(fileOf("logs", b));
		for (const [path, range, name] of [
			[blocks(8, 15), "8..15", "blocks"],
			[blocks(10, 12), "8..15", "blocks"],
			[events(16, 23), "16..23", "logs"],
		] as const) {
			const r = await api.get(path);
			expect(r.status, `${path} ${r.raw}`).toBe(503);
			expect(r.body).toMatchObject({ statusCode: 503, error: "Service Unavailable", code: "DATA_DAMAGED" });
			const message = String(r.body.message);
			expect(message).toContain(`blocks ${range} of ${api.chain} cannot be served`);
			expect(message).toContain(`(${name})`);
			expect(message).toContain(
				`npm run backfill -- --chain ${api.chain} --rpc <node url> --data-dir <data folder> --from ${range.replace("..", " --to ")}`,
			);
			expect(message).toContain("npm run verify");
			expect(r.raw).not.toMatch(leaks);
		}
		// Blocks in other files still answer.
		expect((await api.get(blocks(0, 7))).status).toBe(200);
		expect((await api.get(events(0, 7))).status).toBe(200);
		expect((await api.get(`${V1}/blocks/latest`)).status).toBe(200);

		const ready = await readyz();
		expect(ready.chain.damaged_files).toEqual([
			{
				file: `${api.chain}/blocks/${partitionFileName("blocks", a)}`,
				from: 8,
				to: 15,
				problem: expect.stringContaining("not a whole Parquet file"),
			},
			{ file: `${api.chain}/logs/${partitionFileName("logs", b)}`, from: 16, to: 23, problem: "missing" },
		]);
		expect(ready.raw).not.toContain(api.dataDir);

		await backfillInto(api.dataDir, api.anvil.url, 31337, { partitionSize: 8 });
		const after = { blocks: await api.get(blocks(8, 15)), events: await api.get(events(16, 23)) };
		expect(after.blocks.status).toBe(200);
		expect(after.blocks.body).toEqual(before.blocks.body);
		expect(after.events.body).toEqual(before.events.body);
		expect((await readyz()).chain.damaged_files).toEqual([]);
	});

	it("found by the check of a new manifest's files, before any query reads them", async () => {
		const dir = api.dataDir;
		const c = chunkAt(24);
		rmSync(fileOf("blocks", c));
		// A fresh store: its first look at the manifest checks every listed file.
		const store = await createStore(dir);
		const app = await buildApp({
			store,
			keyring: createKeyring({ path: join(dir, "_keys.json"), envKeys: [TEST_KEY] }),
			dataDir: dir,
		});
		try {
			const ready = (await app.inject({ method: "GET", url: "/readyz" })).json() as {
				chains: { damaged_files: { file: string }[] }[];
			};
			expect(ready.chains[0]?.damaged_files.map((f) => f.file)).toEqual([
				`${api.chain}/blocks/${partitionFileName("blocks", c)}`,
			]);
			const r = await app.inject({ url: blocks(24, 31), headers: AUTH });
			expect(r.statusCode).toBe(503);
			expect(r.json()).toMatchObject({ code: "DATA_DAMAGED" });
			expect(r.body).toContain("blocks 24..31");
		} finally {
			await app.close();
			store.close();
		}
		await backfillInto(dir, api.anvil.url, 31337, { partitionSize: 8 });
		expect((await api.get(blocks(24, 31))).status).toBe(200);
	});
});

describe("a damaged manifest", () => {
	it("answers 503 MANIFEST_DAMAGED, not 'no blocks stored yet', and /readyz says so", async () => {
		const saved = readFileSync(manifestFile(), "utf8");
		try {
			for (const text of [saved.slice(0, 100), "[]", JSON.stringify({ version: 1 })]) {
				writeFileSync(manifestFile(), text);
				for (const path of [`${V1}/blocks/latest`, blocks(0, 7), events(0, 7)]) {
					const r = await api.get(path);
					expect(r.status, `${text.slice(0, 20)} ${path}`).toBe(503);
					expect(r.body.code).toBe("MANIFEST_DAMAGED");
					expect(String(r.body.message)).toContain(`the manifest of ${api.chain}`);
					expect(String(r.body.message)).toContain(`npm run verify -- --chain ${api.chain}`);
					expect(r.raw).not.toMatch(leaks);
					expect(r.raw).not.toMatch(/undefined|SyntaxError/);
				}
				const ready = await readyz();
				expect(ready.chain.manifest_damaged).toEqual(expect.stringMatching(/^it is/));
				expect(ready.chain.ready).toBe(false);
			}
		} finally {
			writeFileSync(manifestFile(), saved);
		}
		expect((await api.get(`${V1}/blocks/latest`)).status).toBe(200);
		expect((await readyz()).chain.manifest_damaged).toBeNull();
	});
});
