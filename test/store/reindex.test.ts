import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { DATASETS } from "../../src/extract/rows.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { acquireWriteLock } from "../../src/store/files/lock.js";
import { INDEX_NAMES, indexesFor } from "../../src/store/format/indexes.js";
import { manifestPath } from "../../src/store/format/layout.js";
import type { Manifest } from "../../src/store/format/records.js";
import { reindexChain } from "../../src/store/repair/reindex.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { REPO_ROOT, runScript } from "../helpers/cli.js";

/**
 * Reindexing data written before index files existed: on a copy of a backfilled folder with the
 * index files deleted and `indexes` stripped from its manifest, reindexChain (and npm run reindex)
 * writes them back, identical to the ones the backfill wrote, and the API answers the same before
 * and after; a second run finds nothing to do.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const KEY = "reindex-key";
let anvil: AnvilInstance;
let work: WorkloadResult;
let root: string;
let original: string;

const readManifest = (dir: string) => JSON.parse(readFileSync(manifestPath(dir, CHAIN_ID), "utf8")) as Manifest;
/** A manifest but for its save counter (a reindex saves once per chunk; the backfill did not). */
const listing = (dir: string) => {
	const { generation: _saves, ...rest } = readManifest(dir);
	return rest;
};
const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** A copy of the backfilled folder as data written before indexes: no index files, no `indexes`
 * (for the chunks `strip` picks; with `only`, just that index, as when a new kind is added). */
async function unindexedCopy(
	name: string,
	strip: (i: number) => boolean = () => true,
	only?: (typeof INDEX_NAMES)[number],
): Promise<string> {
	const dir = join(root, name);
	await cp(original, dir, { recursive: true });
	const m = readManifest(dir);
	for (const [i, c] of m.chunks.entries()) {
		if (!strip(i)) continue;
		if (only) c.indexes = c.indexes?.filter((x) => x !== only);
		else delete c.indexes;
		for (const index of only ? [only] : INDEX_NAMES) {
			// The index file and its key filter.
			if (!existsSync(join(dir, CHAIN_ID, index))) continue;
			const files = (await readdir(join(dir, CHAIN_ID, index))).filter((f) =>
				f.includes(`_${String(c.from).padStart(12, "0")}_`),
			);
			for (const file of files) await rm(join(dir, CHAIN_ID, index, file));
		}
	}
	writeFileSync(manifestPath(dir, CHAIN_ID), `${JSON.stringify(m, null, 1)}\n`);
	return dir;
}

/** Every index file of a folder: name → sha256. */
async function indexFiles(dir: string): Promise<Record<string, string>> {
	const out: Record<string, string> = {};
	for (const index of INDEX_NAMES) {
		const folder = join(dir, CHAIN_ID, index);
		if (!existsSync(folder)) continue;
		// The Delta log is not an index file (test/store/delta-lake.test.ts checks it).
		for (const f of await readdir(folder)) if (f !== "_delta_log") out[`${index}/${f}`] = sha(join(folder, f));
	}
	return out;
}

/** The API over a folder, and the answers to a fixed set of wallet requests (pages followed to the end). */
async function apiAnswers(app: FastifyInstance): Promise<Record<string, unknown>> {
	const out: Record<string, unknown> = {};
	const get = async (url: string) => {
		const res = await app.inject({ url, headers: { authorization: `Bearer ${KEY}` } });
		expect(res.statusCode, url).toBe(200);
		return res.json() as { range: { next_offset: string | null }; items: unknown[] };
	};
	const wallets = [...Object.values(work.accounts), ...Object.values(work.contracts), `0x${"0".repeat(40)}`];
	const queries = [
		"transfers?asset_type=native,ft,nft&limit=1000",
		"transfers?asset_type=native,ft,nft&order=desc&limit=3",
		"transfers?asset_type=ft&direction=incoming&limit=2",
		"transfers?asset_type=native,nft&direction=outgoing&block_number_start=5&block_number_end=27&limit=2",
		"txs?limit=1000",
		"txs?order=desc&limit=2&include_logs=true",
		"txs?direction=outgoing&block_number_start=3&block_number_end=-4&limit=3",
	];
	for (const w of wallets) {
		for (const q of queries) {
			const url = `/${CHAIN_ID}/v1/address/${w}/${q}`;
			const pages = [await get(url)];
			for (let next = pages[0]?.range.next_offset; next; next = pages.at(-1)?.range.next_offset) {
				pages.push(await get(`${url}&offset=${next}`));
			}
			out[url] = pages;
		}
	}
	return out;
}

async function serve(dir: string) {
	const store: Store = await createStore(dir);
	const app = await buildApp({
		store,
		keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
		dataDir: dir,
	});
	return {
		app,
		async close() {
			await app.close();
			store.close();
		},
	};
}

let expectedAnswers: Record<string, unknown>;

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	work = await runWorkload({ rpcUrl: anvil.url });
	root = await mkdtemp(join(tmpdir(), "chainlake-reindex-"));
	original = join(root, "original");
	await backfillInto(original, anvil.url, CHAIN, { traces: "parity", partitionSize: 8 });
	const api = await serve(original);
	try {
		expectedAnswers = await apiAnswers(api.app);
		// The requests do list things (transfers and transactions of most wallets, over several pages).
		const items = Object.values(expectedAnswers).flatMap((pages) =>
			(pages as { items: unknown[] }[]).flatMap((p) => p.items),
		);
		expect(items.length).toBeGreaterThan(200);
	} finally {
		await api.close();
	}
});

afterAll(async () => {
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

describe("reindexChain", () => {
	it("writes back the index files the backfill wrote, and the API answers the same before and after", async () => {
		const dir = await unindexedCopy("stripped");
		const m = readManifest(dir);
		expect(m.chunks.length).toBeGreaterThanOrEqual(4);
		expect(m.chunks.every((c) => c.indexes === undefined)).toBe(true);
		expect(await indexFiles(dir)).toEqual({});

		// One API instance across the reindex: it serves the fallback, then picks up the new manifest.
		const api = await serve(dir);
		try {
			const before = await apiAnswers(api.app);
			expect(before).toEqual(expectedAnswers);
			const seen: [number, number][] = [];
			const n = await reindexChain(dir, { id: CHAIN_ID, number: CHAIN }, (from, to) => seen.push([from, to]));
			expect(n).toBe(m.chunks.length);
			expect(seen).toEqual(m.chunks.map((c) => [c.from, c.to]));
			// The same manifest and the same bytes as the backfill's own.
			expect(listing(dir)).toEqual(listing(original));
			expect(await indexFiles(dir)).toEqual(await indexFiles(original));
			// An index file and its filter for every index each chunk lists, and for every run.
			const after = readManifest(dir);
			const listed = after.chunks.reduce((n, c) => n + 2 * (c.indexes?.length ?? 0), 2 * (after.runs?.length ?? 0));
			expect(Object.keys(await indexFiles(dir))).toHaveLength(listed);
			expect(listed).toBeGreaterThan(0);
			expect(await apiAnswers(api.app)).toEqual(before);
		} finally {
			await api.close();
		}

		// Again: nothing to do, nothing rewritten.
		const files = Object.keys(await indexFiles(dir)).map((f) => join(dir, CHAIN_ID, f));
		const mtimes = [manifestPath(dir, CHAIN_ID), ...files].map((f) => statSync(f).mtimeMs);
		expect(await reindexChain(dir, { id: CHAIN_ID, number: CHAIN })).toBe(0);
		expect([manifestPath(dir, CHAIN_ID), ...files].map((f) => statSync(f).mtimeMs)).toEqual(mtimes);
		// The write lock was released.
		(await acquireWriteLock(join(dir, CHAIN_ID)))();
	});

	it("indexes only the chunks that lack indexes (a run interrupted midway resumes)", async () => {
		const dir = await unindexedCopy("partial", (i) => i % 2 === 1);
		const m = readManifest(dir);
		const lacking = m.chunks.filter((c) => c.indexes === undefined).map((c) => [c.from, c.to]);
		expect(lacking.length).toBeGreaterThanOrEqual(2);
		const kept = m.chunks.filter((c) => c.indexes !== undefined);
		const keptFiles = Object.entries(await indexFiles(dir));
		const keptMtimes = keptFiles.map(([f]) => statSync(join(dir, CHAIN_ID, f)).mtimeMs);
		expect(keptFiles).toHaveLength(kept.reduce((n, c) => n + 2 * (c.indexes?.length ?? 0), 0));
		const seen: [number, number][] = [];
		expect(await reindexChain(dir, { id: CHAIN_ID, number: CHAIN }, (from, to) => seen.push([from, to]))).toBe(
			lacking.length,
		);
		expect(seen).toEqual(lacking);
		expect(keptFiles.map(([f]) => statSync(join(dir, CHAIN_ID, f)).mtimeMs)).toEqual(keptMtimes);
		expect(listing(dir)).toEqual(listing(original));
		expect(await indexFiles(dir)).toEqual(await indexFiles(original));
	});

	it("adds an index kind a chunk lacks, keeping the ones it has", async () => {
		const dir = await unindexedCopy("one-kind", () => true, "wallet_transactions");
		const m = readManifest(dir);
		// (The balance deltas too: the backfill's merges derived them, though no chunk is settled.)
		const others = indexesFor(DATASETS).filter((i) => i !== "wallet_transactions");
		expect(m.chunks.every((c) => JSON.stringify([...(c.indexes ?? [])].sort()) === JSON.stringify(others.sort()))).toBe(
			true,
		);
		const kept = Object.keys(await indexFiles(dir));
		expect(kept.every((f) => !f.startsWith("wallet_transactions/"))).toBe(true);
		expect(await reindexChain(dir, { id: CHAIN_ID, number: CHAIN })).toBe(m.chunks.length);
		expect(listing(dir)).toEqual(listing(original));
		expect(await indexFiles(dir)).toEqual(await indexFiles(original));
		expect(await reindexChain(dir, { id: CHAIN_ID, number: CHAIN })).toBe(0);
	});

	it("refuses to run while another live process holds the chain's write lock", async () => {
		const dir = await unindexedCopy("locked");
		// A real holder: another process with the lock (test/store/lock-child.ts).
		const holder = spawn(process.execPath, ["--import", "tsx", "test/store/lock-child.ts"], { cwd: REPO_ROOT });
		holder.stdin.write(`hold ${join(dir, CHAIN_ID)}\n`);
		expect((await once(holder.stdout, "data")).toString()).toBe("held\n");
		try {
			await expect(reindexChain(dir, { id: CHAIN_ID, number: CHAIN })).rejects.toMatchObject({
				code: "DATA_DIR_LOCKED",
				message: expect.stringContaining(`(pid ${holder.pid})`),
			});
		} finally {
			holder.kill("SIGKILL");
		}
		expect(await indexFiles(dir)).toEqual({});
		expect(readManifest(dir).chunks.every((c) => c.indexes === undefined)).toBe(true);
	});
});

describe("npm run reindex", () => {
	it("indexes every chain of the data folder, then finds nothing to do", async () => {
		const dir = await unindexedCopy("cli");
		const chunks = readManifest(dir).chunks;
		const first = await runScript("reindex.ts", ["--data-dir", dir]);
		expect(first.code, first.stderr).toBe(0);
		expect(first.stdout).toMatch(new RegExp(`^${CHAIN_ID}: ${chunks.length} chunks indexed in \\d+\\.\\d s\\n$`));
		for (const c of chunks) expect(first.stderr).toContain(`${CHAIN_ID}: indexed blocks ${c.from}..${c.to}\n`);
		expect(await indexFiles(dir)).toEqual(await indexFiles(original));
		expect(listing(dir)).toEqual(listing(original));

		const second = await runScript("reindex.ts", ["--data-dir", dir, "--chain", CHAIN_ID]);
		expect(second.code, second.stderr).toBe(0);
		expect(second.stdout).toMatch(new RegExp(`^${CHAIN_ID}: 0 chunks indexed in `));
		expect(second.stderr).not.toContain("indexed blocks");

		const api = await serve(dir);
		try {
			expect(await apiAnswers(api.app)).toEqual(expectedAnswers);
		} finally {
			await api.close();
		}
	});
});
