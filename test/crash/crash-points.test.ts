import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nativeBalance, tokenBalances } from "../../src/query/balances.js";
import { tokenHolders } from "../../src/query/holders.js";
import { nftHoldings } from "../../src/query/nfts.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { metadataSource } from "../../src/rpc/token-reads.js";
import { mergeDue } from "../../src/store/chunks/merges.js";
import { DEFERRED } from "../../src/store/format/indexes.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { headRanksDue } from "../../src/store/holdings/head-ranks.js";
import { ranksDue } from "../../src/store/holdings/holder-ranks.js";
import { CRASH_POINTS, type CrashPointName } from "../../src/util/crash-point.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { runScript, spawnScript } from "../helpers/cli.js";
import { datasetRows, fileHashes } from "../helpers/compare.js";
import { checkDeltaLogs } from "../helpers/delta.js";
import { nodeCall, sendMined } from "../helpers/node-rpc.js";
import { folderState, readListed, readManifest, storedHeadOf } from "./folder.js";
import { seededRandom } from "./seeded.js";

/**
 * Crashes at every crash point of the write paths (src/util/crash-point.ts): the real CLIs run
 * with CHAINLAKE_CRASH_AT=<point>[:<n>] and SIGKILL themselves exactly there. After each crash the
 * folder must still read whole through its manifest (what a reader process sees meanwhile); each
 * next run restarts on the crashed folder (and crashes at the next point); a last clean run
 * finishes. Then every dataset and index equals a clean backfill of the same chain (for the
 * backfill byte for byte), with no temporary file, no file the manifest does not list, no lock.
 *
 * Points are chained (the restart after one crash is the run that crashes at the next), so one
 * start of the CLI (~1 s) is both a restart and a crash. A crash series: with
 * CHAINLAKE_CRASH_FULL=1 only (npm run test:long, which CI runs; npm run soak), a short series of
 * each writer (a crash in each stage of its write path: 7 backfill runs, 7 follower runs), then
 * every point crashed at, and a seeded random series of points, arrivals and kill moments follows
 * (CHAINLAKE_CRASH_SEED repeats one). npm test runs the misspelt point's check alone: the series
 * were its largest file (about 100 s of CPU on 2 cores), and test/backfill/crash-resume.test.ts
 * keeps a killed backfill's resume in it.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const FULL = process.env.CHAINLAKE_CRASH_FULL === "1";
/** The points the runs below reached (the test at the end requires all of them). */
const reached = new Set<CrashPointName>();

let anvil: AnvilInstance;
let root: string;
/** The last block of the workload: the backfill's fixed range ends there. */
let workloadHead: number;
let accounts: string[];

const call = (method: string, params: unknown[] = []) => nodeCall(anvil.url, method, params);
const nodeHead = async () => Number(await call("eth_blockNumber"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
	if (!FULL) return;
	// Every token with a holding changed after the holder ranks' block gets head ranks (this chain has
	// none with the default's thousand): the followers below write them (the CLIs inherit it).
	process.env.CHAINLAKE_HEAD_RANKS_MIN_CHANGES = "1";
	anvil = await startAnvil({ chainId: CHAIN });
	// Contracts, tokens, traces, logs: every dataset and index has rows.
	await runWorkload({ rpcUrl: anvil.url });
	workloadHead = await nodeHead();
	accounts = (await call("eth_accounts")) as string[];
	root = await mkdtemp(join(tmpdir(), "chainlake-crash-points-"));
});
afterAll(async () => {
	delete process.env.CHAINLAKE_HEAD_RANKS_MIN_CHANGES;
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

type At = CrashPointName | `${CrashPointName}:${number}`;

/**
 * Runs `script` with CHAINLAKE_CRASH_AT=`at` and waits for it to SIGKILL itself there, while
 * `drive` (if any) acts on the chain. Throws unless it died by SIGKILL at that very point.
 * With `killAfterMs`, a run that has not reached its point by then is killed from outside
 * instead (the soak's random moments).
 */
async function crashAt(
	script: string,
	args: string[],
	at: At,
	drive?: (running: () => boolean) => Promise<void>,
	killAfterMs?: number,
): Promise<{ stderr: string; external: boolean }> {
	const child = spawnScript(script, args, { CHAINLAKE_CRASH_AT: at });
	let stderr = "";
	child.stderr?.on("data", (c) => {
		stderr += c;
	});
	child.stdout?.resume();
	let running = true;
	let external = false;
	const exited = new Promise<NodeJS.Signals | null>((r) =>
		child.on("close", (_code, signal) => {
			running = false;
			r(signal);
		}),
	);
	// A point is waited for up to 3 minutes: the index and chunk merges run only while the follower
	// is caught up, which a full parallel test run on 2 cores can delay for minutes.
	const timer = setTimeout(() => {
		external = true;
		child.kill("SIGKILL");
	}, killAfterMs ?? 180_000);
	const driving = drive?.(() => running);
	const signal = await exited;
	clearTimeout(timer);
	await driving;
	const [name, n = "1"] = at.split(":") as [CrashPointName, string?];
	if (external && killAfterMs !== undefined && signal === "SIGKILL") return { stderr, external };
	if (signal !== "SIGKILL" || external || !stderr.includes(`crash point ${name}:${n} reached`)) {
		throw new Error(
			`${script} with CHAINLAKE_CRASH_AT=${at} did not crash there (signal ${signal}${external ? ", timed out" : ""}):\n${stderr.slice(-3000)}`,
		);
	}
	reached.add(name);
	return { stderr, external };
}

/** What a reader sees right after a crash: every file the manifest lists is there and whole. */
async function assertReadable(chainDir: string, after: string) {
	const s = folderState(chainDir);
	expect(s.missing, `listed but missing after a crash at ${after}`).toEqual([]);
	await expect(readListed(chainDir), `unreadable after a crash at ${after}`).resolves.toBeDefined();
}

/** After the final clean run: nothing temporary, nothing unlisted, nothing missing, no lock. */
function assertTidy(chainDir: string) {
	const s = folderState(chainDir);
	expect({ tmp: s.tmp, unlisted: s.unlisted, missing: s.missing, locked: s.locked }).toEqual({
		tmp: [],
		unlisted: [],
		missing: [],
		locked: false,
	});
}

const backfillArgs = (dir: string) => [
	...["--chain", CHAIN_ID, "--rpc", anvil.url, "--from", "0", "--to", String(workloadHead)],
	...["--data-dir", dir, "--partition-size", "3", "--concurrency", "2", "--traces", "parity"],
];

/**
 * Backfill points, in order, on one folder: each run recovers from the previous crash and gets a
 * little further (a chunk is 7 dataset files, then 4 index files, then the manifest save; its
 * balance delta files come after, in their own save).
 */
const BACKFILL_SEQUENCE: At[] = [
	"lock.acquired", // a fresh folder: only the lock file
	"backfill.chunk-fetched", // the killed run's lock file (its pid) simply locked; chunk 0 in memory
	"parquet.write.tmp-written", // chunk 0's first dataset as .tmp
	"parquet.write.renamed:3", // three dataset files of chunk 0, staged NDJSON left
	"chunk.dataset-written:6",
	"parquet.derive.tmp-written", // chunk 0's datasets, an index as .tmp
	"chunk.index-written",
	"chunk.files-written", // all of chunk 0's files, unlisted
	"recover.file-removed:4", // the start-up cleanup of those files, cut short
	"manifest.tmp-written", // chunk 0 in _manifest.json.tmp only
	"metadata.written", // chunk 0 committed, block 0's token metadata files written, unlisted
	"metadata.committed", // the restart writes them again and lists them
	// (Each chunk's commit is followed by a save listing its balance deltas: merges.ts headStep.)
	"manifest.saved:2", // chunk 0's balance deltas listed, chunk 1 committed
	"delta.committed:3", // a save, one table's Delta commit for it written, the others not yet
	"backfill.chunk-committed:3", // three more chunks committed, the next being fetched
];
/**
 * The short series (CHAINLAKE_CRASH_FULL=1, before the full one): a crash in each stage of the
 * backfill's write path, each next run recovering from the one before: a dataset's .tmp, a chunk's
 * files all written but unlisted, the start-up cleanup of those cut short, the manifest as .tmp,
 * token metadata written unlisted, one table's Delta commit of a save written and not the others',
 * a crash between commits.
 */
const BACKFILL_SHORT: At[] = [
	"parquet.write.tmp-written", // a fresh folder: the lock and chunk 0's first dataset as .tmp
	"chunk.files-written", // the .tmp removed at start; all of chunk 0's files, unlisted
	"recover.file-removed:4", // the start-up cleanup of those files, cut short
	"manifest.tmp-written", // chunk 0 in _manifest.json.tmp only
	"metadata.written", // chunk 0 committed, block 0's token metadata files written, unlisted
	"delta.committed:3", // a save, one table's Delta commit for it written, the others not yet
	"backfill.chunk-committed:3", // three more chunks committed, the next being fetched
];

const followArgs = (dir: string) => [
	...["--follow", `${CHAIN_ID}=${anvil.url}`, "--data-dir", dir],
	// Head blocks are one-block files, a partition (4 blocks) is compacted 3 blocks after its
	// last, and replaced files are deleted at once: every write path runs within seconds.
	...["--finality-depth", "3", "--poll-ms", "20", "--partition-size", "4", "--delete-grace-ms", "0"],
];
const storedHead = (dir: string) => storedHeadOf(join(dir, CHAIN_ID));

type Drive = ((running: () => boolean) => Promise<void>) | undefined;
const none: Drive = undefined;
/** New blocks with a transfer each, one every 100 ms, while the follower runs. */
const mine: Drive = async (running) => {
	for (let i = 0; running(); i++) {
		await sendMined(anvil.url, { from: accounts[i % 3] as string, to: accounts[3] as string, value: "0x1" });
		await sleep(100);
	}
};
/**
 * Ten blocks with a transfer each, one every 100 ms, once the follower has stored the node's head:
 * enough for a partition of its one-block files to become final and be compacted. (Blocks without
 * end keep it appending, its compaction waiting; and each next run has them to catch up on.)
 */
const mineTen =
	(dir: string): Drive =>
	async (running) => {
		while (running() && storedHead(dir) < (await nodeHead())) await sleep(20);
		for (let i = 0; i < 10 && running(); i++) {
			await sendMined(anvil.url, { from: accounts[i % 3] as string, to: accounts[3] as string, value: "0x1" });
			await sleep(100);
		}
	};
/** Hashes of the blocks the reorgs below orphaned, by followed folder, for the ghost check. */
const orphaned = new Map<string, string[]>();
/** Once the follower has stored the node's head block (that very block: an earlier reorg may be
 * pending), replaces the top 2 blocks; their transfers vanish. */
const reorg =
	(dir: string): Drive =>
	async (running) => {
		const hashAt = async (n: number) =>
			((await call("eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as { hash: string }).hash;
		for (;;) {
			if (!running()) return;
			const head = await nodeHead();
			const tip = readManifest(join(dir, CHAIN_ID))?.chunks.find((c) => c.to === head);
			if (tip && tip.last_hash === (await hashAt(head))) {
				// Stored chunks chain by parent hash, so the block below is the canonical one too.
				orphaned.set(dir, [...(orphaned.get(dir) ?? []), await hashAt(head - 1), tip.last_hash]);
				await call("anvil_reorg", [2, []]);
				return;
			}
			await sleep(20);
		}
	};
/** Blocks mined before a run starts: the chain moved on while the follower was down. */
const downtime = (blocks: number) => async () => {
	for (let i = 0; i < blocks; i++) await call("evm_mine");
};

/** Follower points, in order, on one folder: [point, what the chain does meanwhile, before the start]. */
const FOLLOW_SEQUENCE = (dir: string): [At, Drive, (() => Promise<void>)?][] => [
	["follow.started", none], // a fresh folder, lock taken, nothing else
	["follow.append.fetched", none], // catch-up from block 0 fetched
	["follow.append.chunk-written:3", none], // 3 of its chunks written, unlisted
	["follow.append.committed", none], // catch-up committed: final partitions, then one-block files
	["follow.compact.dataset-merged:3", mine], // the first compaction, 3 merged files written
	["parquet.merge.tmp-written", none], // the restart redoes that compaction: a .tmp
	["follow.compact.files-written", none], // merged files complete, the manifest unchanged
	["follow.compact.swapped", none], // merged chunk listed, small files still on disk
	// Settled partitions' index files merged into runs (FAN_IN of them), beside the step loop. A
	// quiet chain: merges run only while the follower is caught up, which a block every 100 ms
	// can prevent for minutes under a full parallel test run.
	["runs.merged", none], // a run file written, no filter, its inputs still listed
	["runs.filter-written", none], // the restart merges again: run and filter written, not listed
	["lookup-db.tmp-written", none], // a lookup records run's lookup database as .tmp, the run not listed
	["runs.lookup-db-written", none], // the restart writes it whole: run, filter and database, not listed
	["runs.committed", none], // the run listed, its inputs unlisted but on disk
	// Then the same chunks' dataset files merged into one chunk (chunk-merges.ts).
	["chunks.merged", none], // the merged chunk's files written, the small chunks still listed
	["chunks.committed", none], // the merged chunk listed, the small chunks' files on disk
	["ranks.written", none], // the merges done: the holder ranks and wallet records written, unlisted
	["head-ranks.written", none], // then the busy tokens' head ranks written, unlisted
	["follow.retire.file-removed:4", mine], // the next compaction's small files, half deleted
	["follow.reorg.detected", reorg(dir)], // a reorg of the top 2 blocks seen
	// Down for a while: the node moved on, so the orphaned blocks now lie deeper than the
	// finality depth below its head; they were stored as non-final, so the restart must still
	// unwind them (not refuse it as a node fault, and so stall for good).
	["follow.reorg.ghosts-written", none, downtime(5)], // the restart sees it again: ghost file written
	["manifest.tmp-written", none], // the truncating manifest as .tmp
	["follow.reorg.committed", none], // orphans unlisted, ghosts listed, their files not retired
	["recover.file-removed:2", none], // the orphans' files removed at start-up, cut short
	["manifest.saved", none], // the canonical blocks appended
];
/**
 * The short series (CHAINLAKE_CRASH_FULL=1, before the full one): a crash in each stage of the
 * follower's write path, each next run recovering from the one before: a catch-up's chunks written
 * but unlisted, a compaction's files written and not swapped in, an index run committed with its
 * inputs on disk, a merged chunk likewise, the holder ranks written and not listed, replaced files
 * half deleted, a reorg's ghost file written, a reorg committed without its canonical blocks. Once
 * down for 48 blocks: the clean backfill compared at the end settles (and reads the opening
 * balances of) blocks 64 below its head only, and the workload's must be settled there as in the
 * follower (the full series mines that many as it goes).
 */
const FOLLOW_SHORT = (dir: string): [At, Drive, (() => Promise<void>)?][] => [
	["follow.append.chunk-written:3", none], // a fresh folder: 3 chunks of the catch-up written, unlisted
	["follow.compact.files-written", mineTen(dir)], // the first compaction's files complete, the manifest unchanged
	["runs.committed", none, downtime(48)], // caught up again, a run listed, its inputs unlisted but on disk
	["chunks.committed", none], // a merged chunk listed, the small chunks' files on disk
	["ranks.written", none], // the merges done: the holder ranks and wallet records written, unlisted
	["head-ranks.written", none], // then the busy tokens' head ranks written, unlisted
	["follow.retire.file-removed:4", mineTen(dir)], // the next compaction's small files, half deleted
	["follow.reorg.ghosts-written", reorg(dir)], // a reorg of the top 2 blocks: its ghost file written
	["follow.reorg.committed", none], // the restart sees it again: orphans unlisted, ghosts listed
];

let metadata: ReturnType<typeof metadataSource> | undefined;
/** Whether no background work (merges.ts, holder and head ranks) is due in `dir`'s chain. */
async function mergesDone(dir: string): Promise<boolean> {
	const m = await loadManifest(dir, CHAIN_ID, CHAIN);
	// (A follower's metadata source: mergeDue counts token metadata as due only for a writer with one.)
	metadata ??= metadataSource(createRpcClient({ urls: [anvil.url], logger: createMemoryLogger() }));
	return !mergeDue(dir, m, metadata) && !ranksDue(dir, m) && !headRanksDue(dir, m);
}

/**
 * Restarts the follower without a crash point, lets it store the node's head, stops it (SIGTERM),
 * and compares every dataset and index with a clean backfill of the chain as it is now.
 */
async function finishAndCompare(dir: string, cleanName: string) {
	// A new block, so that the stored head reaching the node's proves this run is up and working.
	const head = await sendMined(anvil.url, { from: accounts[0] as string, to: accounts[4] as string, value: "0x2" });
	const child = spawnScript("follow.ts", followArgs(dir));
	let stderr = "";
	child.stderr?.on("data", (c) => {
		stderr += c;
	});
	const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
	// Caught up, and its background work on settled blocks done as well (the token metadata and
	// opening balances among it, which a clean backfill has at its end): a follower merges only
	// while caught up, and the soak's short runs may leave it hundreds of blocks behind. Generous:
	// under a full parallel test run a CLI start alone can take several seconds. (Within the
	// series' timeouts, so that a failure here says what the follower said.)
	const deadline = Date.now() + 240_000;
	try {
		while (!(storedHead(dir) >= head && (await mergesDone(dir))) && Date.now() < deadline) await sleep(100);
		// A few more polls, so that a compaction the last block triggers is done too.
		await sleep(300);
	} finally {
		child.kill("SIGTERM");
	}
	expect(await exited, stderr).toBe(0);
	expect(storedHead(dir), stderr).toBe(head);
	expect(await mergesDone(dir), `background work still due after 240 s:\n${stderr}`).toBe(true);
	assertTidy(join(dir, CHAIN_ID));
	expect((await checkDeltaLogs(dir, CHAIN)).problems).toEqual([]);

	const clean = join(root, cleanName);
	await backfillInto(clean, anvil.url, CHAIN, { traces: "auto", partitionSize: 4 });
	const [got, want] = await Promise.all([readListed(join(dir, CHAIN_ID)), readListed(join(clean, CHAIN_ID))]);
	const { ghost_blocks: _ghosts, ...gotData } = got;
	// The balance indexes are derived in the background, so how blocks group into their files
	// depends on when it ran (and the follower settles sooner, at its finality depth, than a
	// backfill, at 64 blocks): compared by their answers instead, below.
	for (const i of DEFERRED) {
		delete gotData[i];
		delete want[i];
	}
	expect(Object.keys(gotData).sort()).toEqual(Object.keys(want).sort());
	for (const d of Object.keys(want)) expect(gotData[d], d).toEqual(want[d]);
	const [followed, backfilled] = await Promise.all([createStore(dir), createStore(clean)]);
	try {
		const at = (s: Store) => s.snapshot(CHAIN_ID);
		for (const a of new Set(
			(want.transfers ?? []).flatMap((t) => [(t as { sender: string }).sender, (t as { recipient: string }).recipient]),
		)) {
			if (!a) continue;
			expect(await nativeBalance(at(followed), a, head), `ETH of ${a}`).toEqual(
				await nativeBalance(at(backfilled), a, head),
			);
			expect(await tokenBalances(at(followed), a), `tokens of ${a}`).toEqual(await tokenBalances(at(backfilled), a));
			const nfts = (s: Store) => nftHoldings(at(s), { by: "address", value: a, n: head, limit: 1000 });
			expect(await nfts(followed), `NFTs of ${a}`).toEqual(await nfts(backfilled));
		}
		// Each ERC-20 token's holders (the follower's from its head ranks, where it wrote them).
		const tokens = new Set(
			(want.transfers ?? [])
				.filter((t) => (t as { token_standard: string }).token_standard === "erc20")
				.map((t) => (t as { contract: string }).contract),
		);
		expect(tokens.size).toBeGreaterThan(0);
		for (const t of tokens) {
			const holders = (s: Store) => tokenHolders(at(s), t, { limit: 1000 });
			expect(await holders(followed), `holders of ${t}`).toEqual(await holders(backfilled));
		}
	} finally {
		followed.close();
		backfilled.close();
	}
	// The orphaned blocks answer as ghosts; the canonical ones replaced them.
	const gone = orphaned.get(dir) ?? [];
	const ghostHashes = (got.ghost_blocks ?? []).map((b) => (b as { hash: string }).hash);
	expect(ghostHashes).toEqual(expect.arrayContaining(gone));
	const canonical = (got.blocks ?? []).map((b) => (b as { hash: string }).hash);
	expect(canonical.filter((h) => gone.includes(h))).toEqual([]);
}

/** A backfill series on one folder, then a clean finish: byte for byte the clean run's files. */
async function backfillSeries(name: string, sequence: At[]) {
	const clean = join(root, `${name}-clean`);
	await backfillInto(clean, anvil.url, CHAIN, { to: workloadHead, partitionSize: 3, traces: "parity" });
	const expected = fileHashes(join(clean, CHAIN_ID));
	expect(Object.keys(expected).filter((f) => f.endsWith(".parquet")).length).toBeGreaterThan(9 * 10);

	const dir = join(root, `${name}-crashed`);
	for (const at of sequence) {
		await crashAt("backfill.ts", backfillArgs(dir), at);
		await assertReadable(join(dir, CHAIN_ID), at);
	}
	const done = await runScript("backfill.ts", backfillArgs(dir));
	expect(done.code, done.stderr).toBe(0);
	assertTidy(join(dir, CHAIN_ID));
	expect(fileHashes(join(dir, CHAIN_ID))).toEqual(expected);
	expect((await checkDeltaLogs(dir, CHAIN)).problems).toEqual([]);
	const [got, want] = await Promise.all([datasetRows(dir, CHAIN), datasetRows(clean, CHAIN)]);
	for (const d of Object.keys(want)) expect(got[d], d).toEqual(want[d]);
}

/** A follower series on one folder, then a clean finish equal to a clean backfill. */
async function followerSeries(name: string, sequence: (dir: string) => [At, Drive, (() => Promise<void>)?][]) {
	const dir = join(root, name);
	for (const [at, drive, before] of sequence(dir)) {
		await before?.();
		await crashAt("follow.ts", followArgs(dir), at, drive);
		await assertReadable(join(dir, CHAIN_ID), at);
	}
	await finishAndCompare(dir, `${name}-clean`);
}

// The two chains of runs share the node (the backfill's range is fixed, below the follower's
// reorgs) and run side by side: most of a run is the CLI's start-up, which the other overlaps.
// The short and the full series run one after the other: a follower series needs a quiet chain
// for its merges, which the other's mining and reorgs would not give it. Timeouts: under a full
// parallel suite on 2 cores a CLI start alone can take several seconds (the full follower series,
// 21 CLI runs, took about 420 s here with the machine otherwise quiet): hang guards, not speed checks.
const SERIES = [
	{
		title: "crash at a point of each stage, restart (CHAINLAKE_CRASH_FULL=1)",
		on: FULL,
		name: "short",
		backfill: BACKFILL_SHORT,
		follow: FOLLOW_SHORT,
		followMs: 600_000,
	},
	{
		title: "crash at every point, restart (CHAINLAKE_CRASH_FULL=1)",
		on: FULL,
		name: "full",
		backfill: BACKFILL_SEQUENCE,
		follow: FOLLOW_SEQUENCE,
		followMs: 720_000,
	},
];
for (const series of SERIES) {
	// (Its two tests concurrent, the describe not: concurrent describes would run side by side too.)
	describe.runIf(series.on)(series.title, () => {
		it.concurrent(
			"backfill: ends with the clean run's files, byte for byte",
			() => backfillSeries(`backfill-${series.name}`, series.backfill),
			300_000,
		);

		it.concurrent(
			"follower: ends equal to a clean backfill, orphaned blocks kept as ghosts",
			() => followerSeries(`followed-${series.name}`, series.follow),
			series.followMs,
		);
	});
}

describe("coverage", () => {
	it.runIf(FULL)("the short series reached each of its points (CHAINLAKE_CRASH_FULL=1)", () => {
		const short = [...BACKFILL_SHORT, ...FOLLOW_SHORT("").map(([at]) => at)].map((at) => at.split(":")[0]);
		expect(short.filter((p) => !reached.has(p as CrashPointName))).toEqual([]);
	});

	it.runIf(FULL)("every crash point was reached by a run above (CHAINLAKE_CRASH_FULL=1)", () => {
		expect(CRASH_POINTS.filter((p) => !reached.has(p))).toEqual([]);
		expect(CRASH_POINTS.length).toBeGreaterThanOrEqual(20);
	});

	it("a misspelt CHAINLAKE_CRASH_AT fails the run instead of never firing", async () => {
		const r = await runScript("backfill.ts", ["--chain", CHAIN_ID], { CHAINLAKE_CRASH_AT: "manifest.svaed" });
		expect(r.code).not.toBe(0);
		expect(r.stderr).toContain('CHAINLAKE_CRASH_AT="manifest.svaed" is not');
	});
});

// The random soak: npm run soak -- --suites only (CHAINLAKE_CRASH_SOAK=1), not npm run test:long
// (9 minutes here). Its short runs rarely let the follower catch up, so most of its kills land in
// catch-up; finishAndCompare waits for the background work they left (seed 1206723970 once
// failed for want of it: the opening balances a caught-up follower reads).
describe.runIf(FULL && process.env.CHAINLAKE_CRASH_SOAK === "1")("soak (CHAINLAKE_CRASH_SOAK=1)", () => {
	it("a seeded random series of points, arrivals and kill moments ends equal to a clean backfill", async () => {
		const rand = seededRandom("crash-points soak");
		const dir = join(root, "soak");
		const points = CRASH_POINTS.filter((p) => !p.startsWith("backfill."));
		const kills: string[] = [];
		for (let round = 0; round < 40; round++) {
			const point = points[rand.int(0, points.length - 1)] as CrashPointName;
			// Points of the start-up come once per run.
			const once = point.startsWith("lock.") || point === "follow.started";
			const at = `${point}:${once ? 1 : rand.int(1, 4)}` as At;
			// Reorg points need a reorg, and some other runs make one too; the rest mine. A run whose point
			// does not come up is killed from outside at a random moment instead.
			const drive = point.startsWith("follow.reorg.") || rand.next() < 0.15 ? reorg(dir) : mine;
			if (rand.next() < 0.2) await downtime(rand.int(1, 6))();
			// (The CLI takes about a second to start.)
			const r = await crashAt("follow.ts", followArgs(dir), at, drive, rand.int(1000, 6000));
			kills.push(`${at}${r.external ? " (timed kill)" : ""}`);
			await assertReadable(join(dir, CHAIN_ID), at);
		}
		process.stderr.write(`soak (seed ${rand.seed}): ${kills.join(", ")}\n`);
		await finishAndCompare(dir, "soak-clean");
	}, 900_000);
});
