import { existsSync } from "node:fs";
import { cp, mkdtemp, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createFollower } from "../../src/follow/follower.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { DEFERRED, INDEX_NAMES, INDEXES, type IndexDef, REPLACED } from "../../src/store/format/indexes.js";
import { partPaths } from "../../src/store/format/key-parts.js";
import { manifestPath, partitionPath } from "../../src/store/format/layout.js";
import type { Manifest, RunEntry } from "../../src/store/format/records.js";
import { filterPath, loadKeyFilter } from "../../src/store/indexes/key-filter.js";
import { isIndexed } from "../../src/store/indexes/listing.js";
import { lookupDbPath } from "../../src/store/indexes/lookup-db.js";
import { FAN_IN, partitionsOf, settledChunks } from "../../src/store/indexes/runs.js";
import { reindexChain } from "../../src/store/repair/reindex.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto, openViews } from "../helpers/anvil-chain.js";
import { runScript } from "../helpers/cli.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";

/**
 * Merged index runs (src/store/runs.ts) on a real chain: the anvil workload plus a stretch of
 * plain transfers, backfilled in 2-block chunks so that dozens of chunks settle and merge into
 * runs of FAN_IN and FAN_IN² chunks. Every wallet page, transaction and block by hash must then
 * answer exactly as from one unmerged chunk (the same chain backfilled in one partition) and as
 * the plain dataset query; the same after a follower merges in the background and the chain
 * reorganises above the runs.
 */
const CHAIN = 31337;
const KEY = "k";
/** The long crash series (npm run test:long): every step of a run's merge killed at, not two. */
const FULL = process.env.CHAINLAKE_CRASH_FULL === "1";
let anvil: AnvilInstance;
let root: string;
let accounts: string[];
const apps: { app: FastifyInstance; store: Store }[] = [];

const rpc = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const manifestOf = async (dir: string) =>
	JSON.parse(await readFile(manifestPath(dir, `eip155-${CHAIN}`), "utf8")) as Manifest;

async function serve(dataDir: string) {
	const store = await createStore(dataDir);
	const app = await buildApp({
		store,
		keyring: createKeyring({ path: join(root, "keys.json"), envKeys: [KEY] }),
		dataDir,
	});
	apps.push({ app, store });
	return (path: string) =>
		app.inject({ url: `/eip155-${CHAIN}/v1${path}`, headers: { authorization: `Bearer ${KEY}` } });
}
type Get = Awaited<ReturnType<typeof serve>>;

/** Every page of a list route, following next_offset: the ids in order. */
async function allIds(get: Get, path: string): Promise<string[]> {
	const ids: string[] = [];
	for (let offset: string | undefined, pages = 0; pages < 200; pages++) {
		const r = await get(`${path}${path.includes("?") ? "&" : "?"}limit=4${offset ? `&offset=${offset}` : ""}`);
		expect(r.statusCode, r.body).toBe(200);
		const body = r.json() as { items: { id: string }[]; range: { has_more: boolean; next_offset?: string } };
		ids.push(...body.items.map((i) => i.id));
		if (!body.range.has_more) return ids;
		offset = body.range.next_offset;
	}
	throw new Error(`more than 200 pages of ${path}`);
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	await runWorkload({ rpcUrl: anvil.url });
	accounts = (await rpc("eth_accounts")) as string[];
	// Transfers between a few wallets over many blocks, and empty blocks: chunks settle and merge.
	for (let i = 0; i < 60; i++)
		await sendMined(anvil.url, { from: accounts[i % 4] as string, to: accounts[(i + 1) % 5] as string, value: "0x7" });
	await rpc("anvil_mine", ["0x46"]);
	root = await mkdtemp(join(tmpdir(), "chainlake-runs-"));
	// Without the Delta Lake logs (--delta off): nothing here reads them, and writing them at each
	// of this backfill's hundred-odd manifest saves is about a third of its CPU.
	await backfillInto(join(root, "merged"), anvil.url, CHAIN, {
		partitionSize: 2,
		traces: "parity",
		lake: { delta: false },
	});
	await backfillInto(join(root, "whole"), anvil.url, CHAIN, { partitionSize: 100_000, traces: "parity" });
}, 240_000);

afterAll(async () => {
	for (const { app, store } of apps) {
		await app.close();
		store.close();
	}
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

describe("merged index runs", () => {
	it("the backfill merges settled chunks into runs of growing size, each with its filter", async () => {
		const dir = join(root, "merged");
		const m = await manifestOf(dir);
		// Every kind written (the replaced ones are only read: format/indexes.ts).
		for (const index of INDEX_NAMES.filter((i) => !REPLACED.some(([old]) => old === i))) {
			const runs = (m.runs ?? []).filter((r) => r.index === index);
			expect(runs.map((r) => r.chunks)).toContain(FAN_IN * FAN_IN);
			for (const r of runs) {
				const path = partitionPath(dir, m.chain, index, r);
				expect(existsSync(path), path).toBe(true);
				// Every key of the run passes its filter (no false negative).
				const filter = await loadKeyFilter(filterPath(path));
				const views = await openViews(dir, CHAIN);
				try {
					const keys = await views.rows(`SELECT DISTINCT ${INDEXES[index].key} AS k FROM read_parquet('${path}')`);
					expect(keys.length).toBe(r.keys);
					expect(keys.filter((k) => !filter.has(String(k.k)))).toEqual([]);
				} finally {
					views.close();
				}
				// The chunks it covers no longer list the index: their rows are the run's only.
				const covered = m.chunks.filter((c) => c.from >= r.from && c.to <= r.to);
				expect(covered.reduce((n, c) => n + partitionsOf(m, c), 0)).toBe(r.chunks);
				expect(covered.filter((c) => c.indexes?.includes(index))).toEqual([]);
			}
		}
	});

	it("the settled chunks' dataset files are merged too, 4 of a size at a time, rows unchanged", async () => {
		const m = await manifestOf(join(root, "merged"));
		const whole = await manifestOf(join(root, "whole"));
		const spans = m.chunks.map((c) => partitionsOf(m, c));
		// 2-block partitions: merged into chunks of FAN_IN² partitions (the runs' level 2), the
		// unsettled tail left as written.
		expect(spans).toContain(FAN_IN * FAN_IN);
		expect(spans.every((n) => [1, FAN_IN, FAN_IN * FAN_IN, FAN_IN ** 3].includes(n))).toBe(true);
		// Size-tiered: at most FAN_IN - 1 settled chunks of each level are left unmerged.
		const settled = settledChunks(m);
		expect(settled.reduce((n, c) => n + partitionsOf(m, c), 0)).toBeGreaterThan(FAN_IN ** 2 * 2);
		expect(settled.length).toBeLessThanOrEqual((FAN_IN - 1) * 3);
		for (const c of m.chunks)
			for (const d of c.datasets) expect(existsSync(partitionPath(join(root, "merged"), m.chain, d, c))).toBe(true);
		const total = (x: Manifest, d: string) => x.chunks.reduce((n, c) => n + (c.rows[d as "blocks"] ?? 0), 0);
		for (const d of whole.chunks[0]?.datasets ?? []) expect(total(m, d), d).toBe(total(whole, d));
		// Nothing unlisted left on disk by the merges (their inputs deleted after the grace).
		const views = await openViews(join(root, "merged"), CHAIN);
		try {
			const [n] = await views.rows("SELECT count(*)::INT AS n FROM blocks");
			expect(n?.n).toBe(total(whole, "blocks"));
		} finally {
			views.close();
		}
	});

	it("answers every wallet page, transaction and block by hash as one unmerged chunk and the plain query do", async () => {
		const merged = await serve(join(root, "merged"));
		const whole = await serve(join(root, "whole"));
		const views = await openViews(join(root, "whole"), CHAIN);
		try {
			const wallets = (
				await views.rows(
					"SELECT DISTINCT a FROM (SELECT sender AS a FROM transfers UNION SELECT recipient FROM transfers) WHERE a IS NOT NULL ORDER BY a",
				)
			).map((r) => String(r.a));
			expect(wallets.length).toBeGreaterThan(5);
			for (const a of wallets) {
				for (const order of ["desc", "asc"]) {
					const path = `/address/${a}/transfers?asset_type=native,ft,nft&order=${order}`;
					const got = await allIds(merged, path);
					expect(got, path).toEqual(await allIds(whole, path));
					const plain = await views.rows(
						`SELECT id FROM transfers WHERE sender = '${a}' OR recipient = '${a}' ORDER BY id ${order}`,
					);
					expect(got, path).toEqual(plain.map((r) => r.id));
				}
				const txs = `/address/${a}/txs`;
				expect(await allIds(merged, txs), txs).toEqual(await allIds(whole, txs));
			}
			// Dataset scans (no index) page in windows of rows over merged chunks (list.ts).
			const tokens = await views.rows(
				"SELECT DISTINCT contract AS c FROM transfers WHERE contract IS NOT NULL ORDER BY c",
			);
			expect(tokens.length).toBeGreaterThan(1);
			for (const { c } of tokens) {
				for (const order of ["desc", "asc"]) {
					const path = `/contract/${c}/transfers?order=${order}`;
					const got = await allIds(merged, path);
					const plain = await views.rows(`SELECT id FROM transfers WHERE contract = '${c}' ORDER BY id ${order}`);
					expect(got, path).toEqual(plain.map((r) => r.id));
				}
			}
			const txs = await views.rows("SELECT transaction_hash AS h FROM transactions");
			for (const { h } of txs) {
				const [m, w] = await Promise.all([merged(`/txs/${h}`), whole(`/txs/${h}`)]);
				expect(m.statusCode, String(h)).toBe(200);
				expect(m.json()).toEqual(w.json());
			}
			const blocks = await views.rows("SELECT hash AS h FROM blocks");
			for (const { h } of blocks) {
				const [m, w] = await Promise.all([merged(`/blocks/${h}`), whole(`/blocks/${h}`)]);
				expect(m.statusCode, String(h)).toBe(200);
				expect(m.json()).toEqual(w.json());
			}
			const missing = `0x${"ab".repeat(32)}`;
			expect((await merged(`/txs/${missing}`)).statusCode).toBe(404);
			expect((await merged(`/blocks/${missing}`)).statusCode).toBe(404);
		} finally {
			views.close();
		}
	}, 240_000);

	it("block_records and transaction_records runs carry a lookup database of their rows that lookups by hash attach and read; without it the Parquet parts answer", async () => {
		const dir = join(root, "merged");
		const m = await manifestOf(dir);
		const kinds = INDEX_NAMES.filter((i) => (INDEXES[i] as IndexDef).lookupDb);
		expect(kinds.sort()).toEqual(["block_records", "transaction_records"]);
		const runs = (m.runs ?? []).filter((r) => kinds.includes(r.index));
		for (const kind of kinds) expect(runs.filter((r) => r.index === kind).length, kind).toBeGreaterThan(1);
		// Only the kinds marked so have them.
		expect((m.runs ?? []).filter((r) => r.lookup_db).every((r) => kinds.includes(r.index))).toBe(true);
		const views = await openViews(dir, CHAIN);
		const dbOf = (r: RunEntry) => lookupDbPath(partitionPath(dir, m.chain, r.index, r));
		try {
			for (const [i, r] of runs.entries()) {
				expect(r.lookup_db, `${r.index} ${r.from}..${r.to}`).toBe(true);
				const path = partitionPath(dir, m.chain, r.index, r);
				const parts = partPaths(path, r.parts)
					.map((p) => `'${p}'`)
					.join(", ");
				await views.rows(`ATTACH '${dbOf(r)}' AS look_${i} (READ_ONLY)`);
				const inParquet = await views.rows(`SELECT hash, record FROM read_parquet([${parts}]) ORDER BY hash`);
				expect(inParquet.length).toBe(r.rows);
				expect(await views.rows(`SELECT hash, record FROM look_${i}.records ORDER BY hash`)).toEqual(inParquet);
			}
		} finally {
			views.close();
		}
		const hashes = async (d: string) => {
			const v = await openViews(d, CHAIN);
			try {
				const of = async (sql: string) => (await v.rows(sql)).map((x) => String(x.h));
				return {
					blocks: await of("SELECT hash AS h FROM blocks ORDER BY number"),
					txs: await of("SELECT transaction_hash AS h FROM transactions ORDER BY id"),
				};
			} finally {
				v.close();
			}
		};
		const { blocks, txs } = await hashes(dir);
		expect(txs.length).toBeGreaterThan(60);
		const whole = await serve(join(root, "whole"));
		/** Every block and transaction by hash through `get`, against the unmerged folder's; the lookup databases `store` attached. */
		const answersAll = async (get: Get, store: Store) => {
			for (const path of [...blocks.map((h) => `/blocks/${h}`), ...txs.map((h) => `/txs/${h}`)]) {
				const [a, w] = await Promise.all([get(path), whole(path)]);
				expect(a.statusCode, `${path}: ${a.body}`).toBe(200);
				expect(a.json()).toEqual(w.json());
			}
			expect((await get(`/blocks/0x${"ab".repeat(32)}`)).statusCode).toBe(404);
			expect((await get(`/txs/0x${"ab".repeat(32)}`)).statusCode).toBe(404);
			const attached = await store.query(`eip155-${CHAIN}`, "SELECT path FROM duckdb_databases() WHERE NOT internal");
			return attached.map((x) => String(x.path)).filter((p) => p.endsWith(".duckdb"));
		};
		// Every run's database attached by the lookups of its blocks and transactions.
		const merged = await serve(dir);
		expect((await answersAll(merged, (apps.at(-1) as { store: Store }).store)).sort()).toEqual(runs.map(dbOf).sort());

		// A folder whose runs were merged before lookup databases (no flag, no file): the parts
		// answer, and the background merges (here reindex's) write the databases.
		const older = join(root, "no-lookup-db");
		await cp(dir, older, { recursive: true });
		const stripped = await manifestOf(older);
		for (const r of stripped.runs ?? []) {
			await rm(lookupDbPath(partitionPath(older, m.chain, r.index, r)), { force: true });
			delete r.lookup_db;
		}
		await writeFile(manifestPath(older, m.chain), JSON.stringify(stripped));
		expect(await answersAll(await serve(older), (apps.at(-1) as { store: Store }).store)).toEqual([]);
		await reindexChain(older, { id: `eip155-${CHAIN}`, number: CHAIN });
		const redone = await manifestOf(older);
		const olderRuns = (redone.runs ?? []).filter((r) => kinds.includes(r.index));
		const spans = (rs: RunEntry[]) => rs.map((r) => [r.index, r.from, r.to, r.lookup_db ?? false]).sort();
		expect(spans(olderRuns)).toEqual(spans(runs));
		for (const r of olderRuns) expect(existsSync(lookupDbPath(partitionPath(older, m.chain, r.index, r)))).toBe(true);
		expect(await answersAll(await serve(older), (apps.at(-1) as { store: Store }).store)).toHaveLength(runs.length);

		// Listed but gone (deleted by hand): the lookup reads the run's parts instead, every answer whole.
		const lost = join(root, "lost-lookup-db");
		await cp(dir, lost, { recursive: true });
		for (const r of runs) await rm(lookupDbPath(partitionPath(lost, m.chain, r.index, r)));
		expect(await answersAll(await serve(lost), (apps.at(-1) as { store: Store }).store)).toEqual([]);
	}, 240_000);

	it("a damaged run: verify names it and the reindex command, the API answers 503, reindex rebuilds it", async () => {
		const dir = join(root, "damaged-run");
		await cp(join(root, "merged"), dir, { recursive: true });
		const before = await manifestOf(dir);
		const run = (before.runs ?? []).find((r) => r.index === "wallet_transfers" && r.chunks === FAN_IN * FAN_IN);
		if (!run) throw new Error("no run of FAN_IN² chunks");
		const path = partitionPath(dir, before.chain, run.index, run);
		await truncate(path, 100);

		const checked = await runScript("verify.ts", ["--data-dir", dir]);
		expect(checked.code, checked.stdout + checked.stderr).toBe(1);
		expect(checked.stdout).toContain(`merged index runs damaged`);
		expect(checked.stdout).toContain(path.slice(dir.length + 1));
		expect(checked.stdout).toContain(`npm run reindex -- --data-dir ${dir} --chain eip155-${CHAIN}`);
		const damaged = await serve(dir);
		const wallet = accounts[1] as string;
		const answer = await damaged(`/address/${wallet}/transfers?asset_type=native,ft,nft`);
		expect(answer.statusCode, answer.body).toBe(503);
		expect(answer.json().code).toBe("DATA_DAMAGED");

		await reindexChain(dir, { id: `eip155-${CHAIN}`, number: CHAIN });
		const after = await manifestOf(dir);
		const spans = (m: Manifest) =>
			(m.runs ?? [])
				.filter((r) => r.index === run.index)
				.map((r) => [r.from, r.to, r.chunks])
				.sort((a, b) => (a[0] as number) - (b[0] as number));
		// The other runs stay; the rebuilt range is indexed again: by a run, or (the dropped run
		// having covered one merged chunk) by that chunk's own index file.
		expect(spans(after)).toEqual(expect.arrayContaining(spans(before).filter((s) => s[0] !== run.from)));
		const inRange = after.chunks.filter((c) => c.from >= run.from && c.to <= run.to);
		expect(inRange.length).toBeGreaterThan(0);
		for (const c of inRange) expect(isIndexed(after, run.index, c), `${c.from}..${c.to}`).toBe(true);
		expect((await runScript("verify.ts", ["--data-dir", dir])).code).toBe(0);
		const repaired = await serve(dir);
		const whole = await serve(join(root, "whole"));
		const page = `/address/${wallet}/transfers?asset_type=native,ft,nft`;
		expect(await allIds(repaired, page)).toEqual(await allIds(whole, page));
	}, 240_000);

	it(`reindex --whole-history merges each lookup index's settled history into one run${FULL ? ", through crashes," : ","} every answer unchanged`, async () => {
		const dir = join(root, "whole-history");
		await cp(join(root, "merged"), dir, { recursive: true });
		const before = await manifestOf(dir);
		const settled = settledChunks(before);
		const [first, last] = [settled[0], settled.at(-1)];
		if (!first || !last) throw new Error("no settled chunks");
		const args = ["--data-dir", dir, "--whole-history", "--delta", "off"];
		// Killed at a step of a run's merge, then run again: after each kill the folder reads whole
		// through its manifest. A crash series, so with CHAINLAKE_CRASH_FULL=1 only (npm run
		// test:long, which CI runs), at each step: written, filter written, lookup database half and
		// wholly written, committed. Each kill is two CLI starts (the reindex, then verify): about 10 s
		// apiece beside the other files.
		const points = FULL
			? ["runs.merged", "runs.filter-written", "lookup-db.tmp-written", "runs.lookup-db-written", "runs.committed"]
			: [];
		for (const point of points) {
			const crashed = await runScript("reindex.ts", args, { CHAINLAKE_CRASH_AT: point });
			expect(crashed.signal, crashed.stderr).toBe("SIGKILL");
			expect(crashed.stderr).toContain(`crash point ${point}:1 reached`);
			const checked = await runScript("verify.ts", ["--data-dir", dir]);
			expect(checked.code, `${point}: ${checked.stdout}`).toBe(0);
		}
		const r = await runScript("reindex.ts", args);
		expect(r.code, r.stderr).toBe(0);
		const after = await manifestOf(dir);
		// Every lookup kind written (replaced kinds are only read): one run over the whole settled
		// history, no settled chunk listing its own file of it; the unsettled tail keeps its own
		// files. The balance deltas keep their runs (a balance at a past block starts from their bounds).
		const runsOfKind = (m: Manifest, i: string) => (m.runs ?? []).filter((x) => x.index === i);
		for (const index of DEFERRED) expect(runsOfKind(after, index), index).toEqual(runsOfKind(before, index));
		expect(DEFERRED.some((i) => runsOfKind(before, i).length > 1)).toBe(true);
		for (const index of INDEX_NAMES.filter((i) => !REPLACED.some(([old]) => old === i) && !DEFERRED.includes(i))) {
			const runs = runsOfKind(after, index);
			expect(
				runs.map((x) => [x.from, x.to]),
				index,
			).toEqual([[first.from, last.to]]);
			expect(runs[0]?.chunks, index).toBe(settled.reduce((n, c) => n + partitionsOf(after, c), 0));
			expect(settledChunks(after).filter((c) => c.indexes?.includes(index))).toEqual([]);
		}
		// The run's files exist and read whole; a second run has nothing left to merge.
		expect((await runScript("verify.ts", ["--data-dir", dir])).code).toBe(0);
		await reindexChain(dir, { id: `eip155-${CHAIN}`, number: CHAIN }, undefined, undefined, undefined, {}, true);
		expect((await manifestOf(dir)).runs).toEqual(after.runs);

		const merged = await serve(join(root, "merged"));
		const whole = await serve(dir);
		const raw = (apps.at(-1) as { app: FastifyInstance }).app;
		const rawMerged = (apps.at(-2) as { app: FastifyInstance }).app;
		const headers = { authorization: `Bearer ${KEY}` };
		const views = await openViews(dir, CHAIN);
		try {
			const wallets = (
				await views.rows(
					"SELECT DISTINCT a FROM (SELECT sender AS a FROM transfers UNION SELECT recipient FROM transfers) WHERE a IS NOT NULL ORDER BY a",
				)
			).map((x) => String(x.a));
			for (const a of wallets) {
				for (const path of [
					`/address/${a}/transfers?asset_type=native,ft,nft&order=desc`,
					`/address/${a}/txs`,
					`/contracts/creates?caller=${a}`,
				])
					expect(await allIds(whole, path), path).toEqual(await allIds(merged, path));
				// Balances at the head (the deltas they sum kept their runs).
				for (const kind of ["tokens", "native"]) {
					const url = `/balances/eip155-${CHAIN}/v1/addresses/${a}/${kind}`;
					const [w, m] = await Promise.all([raw.inject({ url, headers }), rawMerged.inject({ url, headers })]);
					expect(w.statusCode, `${url}: ${w.body}`).toBe(200);
					expect(w.json(), url).toEqual(m.json());
				}
			}
			// Balances as of past blocks: token holders and wallets' tokens, at settled chunks' last blocks.
			const tokens = await views.rows("SELECT DISTINCT contract AS c FROM transfers WHERE asset_type = 'ft'");
			expect(tokens.length).toBeGreaterThan(0);
			for (const c of settled.filter((_, i) => i % 4 === 0)) {
				const urls = [
					...tokens.map(({ c: t }) => `/balances/eip155-${CHAIN}/v1/tokens/${t}/holders?block_number=${c.to}`),
					...wallets.slice(0, 4).map((a) => `/balances/eip155-${CHAIN}/v1/addresses/${a}/tokens?block_number=${c.to}`),
				];
				for (const url of urls) {
					const [w, m] = await Promise.all([raw.inject({ url, headers }), rawMerged.inject({ url, headers })]);
					expect(w.statusCode, `${url}: ${w.body}`).toBe(200);
					expect(w.json(), url).toEqual(m.json());
				}
			}
			for (const { h } of await views.rows("SELECT transaction_hash AS h FROM transactions")) {
				const got = await whole(`/txs/${h}`);
				expect(got.statusCode, String(h)).toBe(200);
				expect(got.json()).toEqual((await merged(`/txs/${h}`)).json());
			}
		} finally {
			views.close();
		}
	}, 240_000);

	it("a follower merges in the background, and a reorg above the runs leaves every answer right", async () => {
		const dir = join(root, "followed");
		const logger = createMemoryLogger();
		// 4-block partitions: half the chunks of the backfill's 2-block ones (writing and merging
		// those again took the follower twice as long), still dozens of chunks to merge into runs
		// of 4 and 16; no Delta logs, as for the backfill.
		const follower = createFollower({
			rpc: createRpcClient({ urls: [anvil.url], logger }),
			chain: parseChainId(`eip155-${CHAIN}`),
			dataDir: dir,
			logger,
			traces: "parity",
			finalityDepth: 3,
			partitionSize: 4,
			lake: { delta: false },
		});
		try {
			for (let i = 0; i < 5; i++) {
				await follower.step();
				await follower.merges();
			}
			// More runs than kinds written (the replaced kinds are read, never written: format/indexes.ts).
			expect(((await manifestOf(dir)).runs ?? []).length).toBeGreaterThan(INDEX_NAMES.length - REPLACED.length);
			const only = `0x${"e1".repeat(20)}`;
			await sendMined(anvil.url, { from: accounts[2] as string, to: only, value: "0x99" });
			await follower.step();
			await rpc("anvil_reorg", [2, []]);
			const events = await follower.step();
			expect(events.some((e) => e.type === "reorg")).toBe(true);
			await follower.merges();

			const fresh = join(root, "fresh");
			await backfillInto(fresh, anvil.url, CHAIN, { partitionSize: 100_000, traces: "parity" });
			const [followed, clean] = [await serve(dir), await serve(fresh)];
			for (const a of [...accounts.slice(0, 5), only]) {
				const path = `/address/${a}/transfers?asset_type=native,ft,nft`;
				expect(await allIds(followed, path), path).toEqual(await allIds(clean, path));
			}
			const latest = (await clean("/blocks/latest")).json() as { hash: string };
			expect((await followed(`/blocks/${latest.hash}`)).json()).toEqual((await clean(`/blocks/${latest.hash}`)).json());
		} finally {
			await follower.stop();
		}
	}, 240_000);
});
