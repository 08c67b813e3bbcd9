import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, readKeys } from "../../src/api/keys.js";
import { createBackgroundMerges } from "../../src/follow/background-merges.js";
import { createDamageBackoff } from "../../src/follow/damage-backoff.js";
import type { FollowState } from "../../src/follow/follow-context.js";
import { createFollower } from "../../src/follow/follower.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { metadataSource } from "../../src/rpc/token-reads.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { noteRetired, readRetired } from "../../src/store/retire/retired-journal.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { folderState, storedHeadOf } from "../crash/folder.js";
import { backfillInto, copyWithoutHeadDeltas } from "../helpers/anvil-chain.js";
import { runScript } from "../helpers/cli.js";
import { datasetRows } from "../helpers/compare.js";
import { nodeCall } from "../helpers/node-rpc.js";

/**
 * A full disk, for real: the data folder on a small tmpfs, filled up with a ballast file while
 * the follower runs and before a backfill. The follower must say so once (naming the folder and
 * its free space), back off instead of retrying at every poll, and carry on by itself once space
 * is freed; the backfill must stop with that message, a non-zero exit and nothing half-written
 * left, and resume when run again. Needs to mount a tmpfs (root, or CAP_SYS_ADMIN): skipped, with
 * the reason, where the machine does not allow it.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const MOUNT = join(tmpdir(), `chainlake-tmpfs-${process.pid}`);
mkdirSync(MOUNT, { recursive: true });
const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", MOUNT], { encoding: "utf8" });
const SKIP =
	mounted.status === 0
		? null
		: `cannot mount a tmpfs at ${MOUNT} (needs root or CAP_SYS_ADMIN): ${(mounted.stderr || mounted.error?.message || "").trim()}`;
if (SKIP) console.warn(`test/store/disk-full.test.ts skipped: ${SKIP}`);

let anvil: AnvilInstance;
let root: string;

beforeAll(async () => {
	if (SKIP) return;
	anvil = await startAnvil({ chainId: CHAIN });
	await runWorkload({ rpcUrl: anvil.url });
	root = await mkdtemp(join(tmpdir(), "chainlake-disk-full-"));
});
afterAll(async () => {
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
	if (!SKIP) spawnSync("umount", ["-l", MOUNT]);
	rmSync(MOUNT, { recursive: true, force: true });
});

const BALLAST = join(MOUNT, "ballast");
/** Fills the tmpfs, leaving `leave` bytes free. */
function fill(leave = 0) {
	const s = statfsSync(MOUNT);
	writeFileSync(BALLAST, Buffer.alloc(Math.max(0, s.bavail * s.bsize - leave)));
}
const free = () => rmSync(BALLAST, { force: true });
/** Temporary files under a chain folder: `.tmp` names, and staged rows in `_staging`. */
const leftovers = (chainDir: string) =>
	readdirSync(chainDir, { recursive: true, withFileTypes: true })
		.filter((e) => e.isFile() && (/\.tmp$/.test(e.name) || e.parentPath.endsWith("_staging")))
		.map((e) => relative(chainDir, join(e.parentPath, e.name)));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * sha256 of every Parquet file a chain folder's manifest lists, by path without its generation:
 * a run that ends saves the holder ranks of what it stored (store/holdings/holder-ranks.ts), so a
 * folder written in two runs numbers its later saves apart from one written in one run, and keeps
 * the replaced ranks retired for readers a while.
 */
function parquetHashes(chainDir: string): Record<string, string> {
	const out: Record<string, string> = {};
	for (const f of folderState(chainDir).listed) {
		if (!f.endsWith(".parquet")) continue;
		out[f.replace(/_g\d+(\.p\d+)?\.parquet$/, "$1.parquet")] = createHash("sha256")
			.update(readFileSync(join(chainDir, f)))
			.digest("hex");
	}
	return out;
}

describe("a full disk", () => {
	it("the follower logs it once with the folder and free space, backs off, and recovers by itself", async (ctx) => {
		if (SKIP) return ctx.skip(SKIP);
		const dataDir = join(MOUNT, "follow");
		const logger = createMemoryLogger();
		const follower = createFollower({
			rpc: createRpcClient({ urls: [anvil.url], logger }),
			chain: parseChainId(CHAIN_ID),
			dataDir,
			logger,
			pollMs: 50,
			finalityDepth: 3,
			partitionSize: 4,
		});
		const head = async () => Number(await nodeCall(anvil.url, "eth_blockNumber"));
		const stored = () => storedHeadOf(join(dataDir, CHAIN_ID));
		const until = async (what: string, ok: () => Promise<boolean> | boolean, ms = 30_000) => {
			const deadline = Date.now() + ms;
			while (!(await ok())) {
				if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${logger.lines.join("\n")}`);
				await sleep(20);
			}
		};
		follower.start();
		try {
			// (Hang guards, not speed checks: a whole npm test here runs at a load of 8-9.)
			await until("the follower to catch up", async () => stored() === (await head()), 90_000);
			fill();
			const faultsBefore = follower.stats.faults;
			await nodeCall(anvil.url, "evm_mine");
			// Attempts at about 0, 1 and 3 s (backoff 1 s, 2 s, 4 s...); without backoff, one every poll (50 ms).
			await sleep(3500);
			const attempts = follower.stats.faults - faultsBefore;
			// The steps say it once; a background merge that met it too, once more in its own words.
			const said = logger.lines.filter((l) => l.includes(`follow ${CHAIN_ID}: disk full`));
			expect(said, logger.lines.join("\n")).toHaveLength(1);
			expect(logger.lines.filter((l) => l.includes(`merges on ${CHAIN_ID}: disk full`)).length).toBeLessThanOrEqual(1);
			expect(said[0]).toContain(`cannot write to ${dataDir}`);
			expect(said[0]).toMatch(/\(\d+ KiB free of 16\.0 MiB\)/);
			expect(attempts, logger.lines.join("\n")).toBeGreaterThanOrEqual(2);
			expect(attempts, logger.lines.join("\n")).toBeLessThanOrEqual(4);
			expect(follower.stats.lastFault?.message).toContain(`disk full in ${dataDir}`);
			expect(stored()).toBeLessThan(await head());
			// Issue 27: each failed attempt left its temporary files (a dataset's or index's .tmp, the
			// staged rows) on the full disk until the next start. A failed write removes its own.
			// Looked at once the next attempt has failed (its fault is counted after its write removed its
			// files), not while one writes, nor a background merge: once, in a whole npm test on 2 cores,
			// a `.tmp` was seen here at 3.5 s, when the third attempt (at about 3 s) may still write.
			await follower.merges();
			const counted = follower.stats.faults;
			await until("the next attempt to fail", () => follower.stats.faults > counted, 60_000);
			expect(leftovers(join(dataDir, CHAIN_ID)), logger.lines.join("\n")).toEqual([]);

			free();
			await nodeCall(anvil.url, "evm_mine");
			await until("the follower to store the head again", async () => stored() === (await head()), 20_000);
			// Said once the step that wrote returns: after its manifest save, the step's merges and
			// balance deltas still run (1.1-1.5 s alone here; past 5 s once in a whole npm test on 2 cores).
			const back = () => logger.lines.filter((l) => l.includes(`follow ${CHAIN_ID}: writing to ${dataDir} again`));
			await until("the recovery to be logged", () => back().length > 0, 30_000);
			expect(back()).toHaveLength(1);
			expect(back()[0]).toMatch(/\(\d+\.\d MiB free of 16\.0 MiB\) after \d+ s and \d attempts on a full disk/);
		} finally {
			free();
			await follower.stop();
		}
		// Nothing lost or doubled: every dataset equals a clean backfill of the same blocks.
		const clean = join(root, "clean-follow");
		await backfillInto(clean, anvil.url, CHAIN, { to: stored() });
		const [followed, expected] = await Promise.all([datasetRows(dataDir, CHAIN), datasetRows(clean, CHAIN)]);
		for (const d of Object.keys(expected)) expect(followed[d], d).toEqual(expected[d]);
	});

	it("the backfill stops with the folder and free space, exit 1, nothing half-written left; the same command resumes", async (ctx) => {
		if (SKIP) return ctx.skip(SKIP);
		const dataDir = join(MOUNT, "backfill");
		const chainDir = join(dataDir, CHAIN_ID);
		const args = (to: number, dir = dataDir) => [
			...["--chain", CHAIN_ID, "--rpc", anvil.url, "--from", "0", "--to", String(to), "--data-dir", dir],
			...["--partition-size", "3", "--traces", "parity"],
		];
		const first = await runScript("backfill.ts", args(8));
		expect(first.code, first.stderr).toBe(0);
		// Room for part of a chunk: some of its files are written before the disk is full (96 KiB held
		// a whole chunk once the by-address indexes became records).
		fill(48 * 1024);
		const full = await runScript("backfill.ts", args(20));
		free();
		expect(full.code, full.stderr).toBe(1);
		// It had written part of the chunk: those files are gone again, not left for the next start.
		expect(full.stderr).toMatch(/removed [1-9]\d* unlisted files of the chunk in progress/);
		expect(full.stderr).toMatch(
			new RegExp(`error \\[DISK_FULL\\]: no space left for ${chainDir} \\(\\d+ KiB free of 16\\.0 MiB\\)`),
		);
		const s = folderState(chainDir);
		const unlisted = s.unlisted.filter((f) => !/^_[^/]*$/.test(f));
		expect({ tmp: s.tmp, unlisted, missing: s.missing }).toEqual({ tmp: [], unlisted: [], missing: [] });
		const staging = join(chainDir, "_staging");
		expect(existsSync(staging) ? readdirSync(staging) : []).toEqual([]);
		expect(s.storedHead).toBeLessThan(20);

		const resumed = await runScript("backfill.ts", args(20));
		expect(resumed.code, resumed.stderr).toBe(0);
		const clean = join(root, "clean-backfill");
		const r = await runScript("backfill.ts", args(20, clean));
		expect(r.code, r.stderr).toBe(0);
		expect(parquetHashes(chainDir)).toEqual(parquetHashes(join(clean, CHAIN_ID)));
		// And nothing else: no file the manifest does not list, but those retired for readers.
		expect(folderState(chainDir).unlisted.filter((f) => !/^_[^/]*$/.test(f))).toEqual([]);
	});

	// After the backfill's: its folder, with a manifest and the previous generation beside it.
	it("verify --restore-manifest on a full disk fails saying so and leaves nothing half-written; run again, it restores", async (ctx) => {
		if (SKIP) return ctx.skip(SKIP);
		const dataDir = join(MOUNT, "backfill");
		const chainDir = join(dataDir, CHAIN_ID);
		const manifest = join(chainDir, "_manifest.json");
		// Larger than a page: the restored manifest cannot be written whole in what is left below.
		expect(statSync(join(chainDir, "_manifest.prev.json")).size).toBeGreaterThan(4 * 1024);
		// Cut short, as `truncate -s 200` leaves it. Two pages left: the write lock's and the damaged
		// copy's (before the mend, the restored manifest's temporary file was left half-written here).
		const damaged = readFileSync(manifest).subarray(0, 200);
		writeFileSync(manifest, damaged);
		fill(8 * 1024);
		const args = ["--data-dir", dataDir, "--chain", CHAIN_ID, "--restore-manifest"];
		const full = await runScript("verify.ts", args);
		free();
		expect(full.code, full.stderr).toBe(1);
		expect(full.stderr).toMatch(
			new RegExp(`error \\[DISK_FULL\\]: no space left for ${dataDir} \\(\\d+ KiB free of 16\\.0 MiB\\)`),
		);
		// The damaged manifest is where it was, and no temporary file is left on the full disk.
		expect(readFileSync(manifest)).toEqual(damaged);
		expect(leftovers(chainDir)).toEqual([]);

		const again = await runScript("verify.ts", args);
		expect(again.code, again.stdout + again.stderr).toBe(0);
		expect(again.stdout).toContain(`${CHAIN_ID}: restored its manifest from the previous generation`);
		expect(readFileSync(join(chainDir, "_manifest.damaged.json"))).toEqual(damaged);
	});

	it("the retired files' journal on a full disk: the note fails, its temporary file is removed, the journal stays", (ctx) => {
		if (SKIP) return ctx.skip(SKIP);
		const chainDir = join(MOUNT, "journal", CHAIN_ID);
		mkdirSync(chainDir, { recursive: true });
		const file = (i: number) => join(chainDir, "transfers", `transfers_${String(i).padStart(12, "0")}.parquet`);
		noteRetired(chainDir, [file(0)], 1);
		const before = readFileSync(join(chainDir, "_retired.json"));
		fill(0);
		try {
			expect(() => noteRetired(chainDir, [file(1)], 2)).toThrow(/ENOSPC/);
		} finally {
			free();
		}
		// (Before, `_retired.json.tmp` was left holding the full disk's last pages until the next start.)
		expect(existsSync(join(chainDir, "_retired.json.tmp"))).toBe(false);
		expect(readFileSync(join(chainDir, "_retired.json"))).toEqual(before);
		expect(readRetired(chainDir).map((e) => e.files)).toEqual([[relative(chainDir, file(0))]]);
	});

	it("the API key file on a full disk: create fails, its temporary file is removed, the keys stay", (ctx) => {
		if (SKIP) return ctx.skip(SKIP);
		const file = join(MOUNT, "keys", "_keys.json");
		const first = createKey(file, "first");
		const before = readFileSync(file);
		fill(0);
		try {
			expect(() => createKey(file, "second")).toThrow(/ENOSPC/);
		} finally {
			free();
		}
		// (Before, `_keys.json.tmp` was left holding the full disk's last pages.)
		expect(existsSync(`${file}.tmp`)).toBe(false);
		expect(readFileSync(file)).toEqual(before);
		expect(readKeys(file).map((k) => k.id)).toEqual([first.id]);
	});

	it("a follower's merges on a full disk: said once with the folder and free space, nothing left; said again when they write", async (ctx) => {
		if (SKIP) return ctx.skip(SKIP);
		// A folder whose newest chunk lacks its balance deltas: the merges' next write (a follower's
		// state between a head commit and its background step).
		const whole = join(root, "merges-source");
		await backfillInto(whole, anvil.url, CHAIN, { partitionSize: 100_000, lake: { delta: false } });
		const dataDir = join(MOUNT, "merges");
		expect(await copyWithoutHeadDeltas(whole, dataDir, CHAIN)).toBe(1);
		const manifest = await loadManifest(dataDir, CHAIN_ID, CHAIN);
		const generation = manifest.generation ?? 0;
		const logger = createMemoryLogger();
		const merges = createBackgroundMerges({
			dataDir,
			chainId: CHAIN_ID,
			logger,
			metadata: metadataSource(createRpcClient({ urls: [anvil.url], logger })),
			exclusive: (commit) => commit(),
			retire: () => {},
			caughtUp: () => true,
			stopping: () => false,
			damage: createDamageBackoff({ chainId: CHAIN_ID, logger }),
			retryMs: 0,
		});
		// (The background merges read only the state's manifest.)
		const state = { manifest } as FollowState;
		const round = async () => {
			merges.mergeInBackground(state);
			await merges.current();
		};
		fill(0);
		try {
			await round();
			await round();
		} finally {
			free();
		}
		const full = logger.lines.filter((l) => l.includes("disk full"));
		expect(full, logger.lines.join("\n")).toHaveLength(1);
		expect(full[0]).toContain(`merges on ${CHAIN_ID}: disk full: cannot write to ${dataDir}`);
		expect(full[0]).toMatch(/\(\d+ KiB free of 16\.0 MiB\)/);
		// (Before: "merge on eip155-31337 failed, retried in 60 s: IO Error: ...", every attempt.)
		expect(logger.lines.filter((l) => l.includes("failed, retried"))).toEqual([]);
		expect(leftovers(join(dataDir, CHAIN_ID))).toEqual([]);
		await round();
		const back = logger.lines.filter((l) => l.includes(`writing to ${dataDir} again`));
		expect(back, logger.lines.join("\n")).toHaveLength(1);
		expect(back[0]).toMatch(
			/^.*merges on eip155-31337: writing to .* again \(\d+\.\d MiB free of 16\.0 MiB\) after \d+ s on a full disk/,
		);
		// The merges committed once the space was back (the full disk's attempts committed nothing).
		expect((await loadManifest(dataDir, CHAIN_ID, CHAIN)).generation).toBeGreaterThan(generation);
	});
});
