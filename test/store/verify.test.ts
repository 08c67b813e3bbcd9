import {
	closeSync,
	copyFileSync,
	existsSync,
	openSync,
	readFileSync,
	rmSync,
	statSync,
	truncateSync,
	writeFileSync,
	writeSync,
} from "node:fs";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFollower } from "../../src/follow/follower.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { partitionFileName } from "../../src/store/format/layout.js";
import { readManifestSafe } from "../../src/store/format/manifest.js";
import type { ChunkEntry, Manifest } from "../../src/store/format/records.js";
import { verifyChain } from "../../src/store/repair/verify.js";
import { checkRuns } from "../../src/store/repair/verify-runs.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { runScript } from "../helpers/cli.js";
import { datasetRows } from "../helpers/compare.js";

/**
 * Damage to a data folder is noticed and repaired: `npm run verify` names every listed file that
 * is missing, cut short or not as recorded, with its blocks and the command that repairs them;
 * the backfill over the range fetches damaged chunks again (under new names), the follower its
 * own; a damaged manifest (cut short, fields missing, `[]`, another chain's, deleted) is a clear
 * MANIFEST_DAMAGED error naming the file and the way back, and its previous generation restores.
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const TO = 23;
let anvil: AnvilInstance;
let root: string;
let clean: string;
let cleanRows: Record<string, unknown[]>;

const backfillArgs = (dir: string, from = 0, to = TO) => [
	...["--chain", CHAIN_ID, "--rpc", anvil.url, "--from", String(from), "--to", String(to), "--data-dir", dir],
	...["--partition-size", "4", "--traces", "parity"],
];
const backfill = (dir: string, from?: number, to?: number) => runScript("backfill.ts", backfillArgs(dir, from, to));
const verify = (dir: string, ...more: string[]) => runScript("verify.ts", ["--data-dir", dir, ...more]);
/**
 * The same backfill in-process, and what `npm run verify` exits 0 on (scripts/verify.ts: the
 * manifest reads, no listed file and no merged run damaged), for the checks after a repair: the
 * CLIs' own words and exit codes are checked above them, and each CLI start is a second of CPU.
 */
async function backfillHere(dir: string, lake?: { delta: false }): Promise<string> {
	const run = { from: 0, to: TO, partitionSize: 4, traces: "parity" as const };
	const { logger } = await backfillInto(dir, anvil.url, CHAIN, lake ? { ...run, lake } : run);
	return logger.lines.join("\n");
}
async function expectVerifies(dir: string) {
	const r = await verifyChain(dir, CHAIN_ID, { full: true });
	expect(r.manifestError).toBeNull();
	expect(r.problems).toEqual([]);
	expect(await checkRuns(dir, readManifestSafe(dir, CHAIN_ID) as Manifest)).toEqual([]);
}
const manifestFile = (dir: string) => join(dir, CHAIN_ID, "_manifest.json");
const manifestOf = (dir: string) => JSON.parse(readFileSync(manifestFile(dir), "utf8")) as Manifest;
const chunkAt = (dir: string, from: number) => manifestOf(dir).chunks.find((c) => c.from === from) as ChunkEntry;
const fileOf = (dir: string, dataset: string, c: ChunkEntry) =>
	join(dir, CHAIN_ID, dataset, partitionFileName(dataset, c));
/** Files a manifest lists in its chunks: datasets and indexes. */
const filesOf = (dir: string) =>
	manifestOf(dir).chunks.reduce((n, c) => n + c.datasets.length + (c.indexes?.length ?? 0), 0);
const rel = (dataset: string, c: ChunkEntry) => `${CHAIN_ID}/${dataset}/${partitionFileName(dataset, c)}`;
/** A copy of the clean folder to damage. */
async function copyOfClean(name: string): Promise<string> {
	const dir = join(root, name);
	await cp(clean, dir, { recursive: true });
	return dir;
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	await runWorkload({ rpcUrl: anvil.url });
	root = await mkdtemp(join(tmpdir(), "chainlake-verify-"));
	clean = join(root, "clean");
	const r = await backfill(clean);
	expect(r.code, r.stderr).toBe(0);
	cleanRows = await datasetRows(clean, CHAIN);
}, 120_000);
afterAll(async () => {
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("npm run verify and the backfill's repair", () => {
	it("passes a whole folder", async () => {
		const r = await verify(clean);
		expect(r.code, r.stdout + r.stderr).toBe(0);
		expect(r.stdout).toContain(
			`${CHAIN_ID}: 6 ranges, ${filesOf(clean)} files, 0 merged index runs: every file reads and holds the rows recorded`,
		);
	});

	it("names a truncated and a deleted file with their blocks and the repair; the backfill over the range repairs them", async () => {
		const dir = await copyOfClean("damaged");
		const [a, b] = [chunkAt(dir, 4), chunkAt(dir, 12)];
		const truncated = fileOf(dir, "logs", a);
		truncateSync(truncated, Math.floor(statSync(truncated).size / 2));
		rmSync(fileOf(dir, "transfers", b));

		// (Three read-only runs on the same folder: started together.)
		const flagSets = [[], ["--quick"], ["--chain", CHAIN_ID]];
		const runs = await Promise.all(flagSets.map((flags) => verify(dir, ...flags)));
		for (const [i, r] of runs.entries()) {
			const flags = flagSets[i] as string[];
			expect(r.code, `${flags} ${r.stdout}${r.stderr}`).toBe(1);
			expect(r.stdout).toContain(`${CHAIN_ID}: 2 of ${filesOf(clean)} files damaged:`);
			expect(r.stdout).toContain(`${rel("logs", a)} (blocks 4..7): not a whole Parquet file`);
			expect(r.stdout).toContain(`${rel("transfers", b)} (blocks 12..15): missing`);
			expect(r.stdout).toContain(
				`npm run backfill -- --chain ${CHAIN_ID} --rpc <node url> --data-dir ${dir} --from 4 --to 7`,
			);
			expect(r.stdout).toContain(`--from 12 --to 15`);
		}

		// The backfill over the whole range fetches exactly the two damaged chunks again.
		const repaired = await backfill(dir);
		expect(repaired.code, repaired.stderr).toBe(0);
		expect(repaired.stderr).toContain("fetching 2 damaged ranges again: 4..7, 12..15");
		expect(repaired.stderr).toContain("8 to fetch in 2 chunks");
		// Under new names (a newer generation): no listed file was overwritten.
		const m = manifestOf(dir);
		expect(chunkAt(dir, 4).gen).toBeGreaterThan(a.gen ?? 0);
		expect(chunkAt(dir, 12).gen).toBeGreaterThan(b.gen ?? 0);
		expect(m.chunks.map((c) => [c.from, c.to])).toEqual(manifestOf(clean).chunks.map((c) => [c.from, c.to]));
		await expectVerifies(dir);
		expect(await datasetRows(dir, CHAIN)).toEqual(cleanRows);
		// The damaged chunks' files left behind go at the next start, like any unlisted file, once
		// the Delta logs no longer keep them (removed from them, they stay for the retention).
		expect(await backfillHere(dir, { delta: false })).toContain("0 to fetch in 0 chunks");
		expect(existsSync(truncated)).toBe(false);
	});

	it("catches a file that is whole Parquet but not the one recorded (row count), and a page damaged mid-file", async () => {
		const dir = await copyOfClean("swapped");
		const m = manifestOf(dir);
		// Two chunks whose transactions differ in number: one's file in place of the other's.
		const y = m.chunks[0] as ChunkEntry;
		const x = m.chunks.find((c) => c.rows.transactions !== y.rows.transactions) as ChunkEntry;
		copyFileSync(fileOf(dir, "transactions", x), fileOf(dir, "transactions", y));
		const r = await verify(dir);
		expect(r.code).toBe(1);
		expect(r.stdout).toContain(
			`${rel("transactions", y)} (blocks ${y.from}..${y.to}): holds ${x.rows.transactions} rows where the manifest recorded ${y.rows.transactions}`,
		);
		const report = await verifyChain(dir, CHAIN_ID);
		expect(report.problems.map((p) => p.file)).toEqual([rel("transactions", y)]);

		// Bytes in the middle of its column data overwritten, footer intact: only the full read (the default) notices.
		copyFileSync(fileOf(clean, "transactions", y), fileOf(dir, "transactions", y));
		// The dataset file with the most column data.
		const dataEnd = (f: string) => {
			const bytes = readFileSync(f);
			return bytes.length - 8 - bytes.readUInt32LE(bytes.length - 8);
		};
		const [d, c] = m.chunks
			.flatMap((c) => c.datasets.map((d) => [d, c] as const))
			.reduce((best, next) =>
				dataEnd(fileOf(dir, next[0], next[1])) > dataEnd(fileOf(dir, best[0], best[1])) ? next : best,
			);
		const target = fileOf(dir, d, c);
		expect(dataEnd(target)).toBeGreaterThan(1000);
		const fd = openSync(target, "r+");
		writeSync(fd, Buffer.alloc(64, 0xff), 0, 64, Math.floor(dataEnd(target) / 2));
		closeSync(fd);
		const [quick, full] = await Promise.all([verify(dir, "--quick"), verify(dir)]);
		expect(quick.code, quick.stdout + quick.stderr).toBe(0);
		expect(full.code).toBe(1);
		expect(full.stdout).toContain(`${rel(d, c)} (blocks ${c.from}..${c.to}): unreadable (`);
		const line = full.stdout.split("\n").find((l) => l.includes(rel(d, c)));
		expect(line).not.toContain(dir); // DuckDB's words, without the path
	});

	it("is a usage error (exit 2) on a folder without chains or an unknown chain", async () => {
		const empty = join(root, "empty");
		const [r, other] = await Promise.all([verify(empty), verify(clean, "--chain", "eip155-5")]);
		expect(r.code).toBe(2);
		expect(r.stderr).toContain("holds no chain folder");
		expect(other.code).toBe(2);
		expect(other.stderr).toContain("has no folder for eip155-5");
	});
});

describe("the follower repairs the ranges it reads itself", () => {
	it("fetches a damaged head chunk again at start", async () => {
		// Up to the head: the last chunk is a partition's first blocks, which the follower reads (compaction).
		const whole = join(root, "followed-clean");
		const first = await runScript("backfill.ts", [
			...backfillArgs(whole).slice(0, 6),
			"--to",
			"latest",
			...backfillArgs(whole).slice(8),
		]);
		expect(first.code, first.stderr).toBe(0);
		const wholeRows = await datasetRows(whole, CHAIN);
		const dir = join(root, "followed");
		await cp(whole, dir, { recursive: true });
		const tip = manifestOf(dir).chunks.at(-1) as ChunkEntry;
		expect(tip.to - tip.from + 1).toBeLessThan(4);
		rmSync(fileOf(dir, "blocks", tip));
		const logger = createMemoryLogger();
		const follower = createFollower({
			rpc: createRpcClient({ urls: [anvil.url], logger }),
			chain: parseChainId(CHAIN_ID),
			dataDir: dir,
			logger,
			traces: "parity",
			finalityDepth: 2,
			partitionSize: 4,
			deleteGraceMs: 0,
		});
		try {
			const events = await follower.step();
			expect(events).toContainEqual({ type: "blocks", from: tip.from, to: tip.to });
		} finally {
			await follower.stop();
		}
		expect((await verifyChain(dir, CHAIN_ID)).problems).toEqual([]);
		expect(await datasetRows(dir, CHAIN)).toEqual(wholeRows);
	});
});

// Each case damages a copy of its own, and none writes the clean folder: they run side by side
// (most of a case is CLI start-ups, three in a row).
describe.concurrent("a damaged manifest", () => {
	const damage: [string, (path: string) => void, RegExp][] = [
		["cut short", (p) => writeFileSync(p, readFileSync(p, "utf8").slice(0, 200)), /it is not whole JSON/],
		[
			"missing fields",
			(p) => writeFileSync(p, JSON.stringify({ version: 1, chain: CHAIN_ID, chain_number: CHAIN })),
			/it is not a chainlake manifest \(chunks: missing \(expected array\)\)/,
		],
		["[]", (p) => writeFileSync(p, "[]"), /it is not a chainlake manifest \(the whole file: /],
		[
			"another chain's",
			(p) =>
				writeFileSync(
					p,
					JSON.stringify({ ...JSON.parse(readFileSync(p, "utf8")), chain: "eip155-5", chain_number: 5 }),
				),
			/it belongs to eip155-5 \(chain number 5\), not to eip155-31337/,
		],
		["deleted", (p) => rmSync(p), /it is missing, while its previous generation is there/],
	];

	// The failing runs are each kind's own code; the restore after them is the same path for every
	// kind, so npm test runs it for two (a parse failure and a missing file) and
	// CHAINLAKE_CRASH_FULL=1 (npm run test:long, which CI runs) for all five.
	const restoreAll = process.env.CHAINLAKE_CRASH_FULL === "1";
	const restoreOf = new Set(["cut short", "deleted"]);
	it.each(damage)(
		`%s: backfill and verify fail naming the file and the restore${restoreAll ? "; the restore and a backfill repair it" : " (cut short, deleted: the restore and a backfill repair it)"}`,
		async (name, hurt, problem) => {
			const dir = await copyOfClean(`manifest-${name.replace(/\W/g, "")}`);
			hurt(manifestFile(dir));
			for (const r of await Promise.all([backfill(dir), verify(dir)])) {
				expect(r.code, r.stdout + r.stderr).toBe(1);
				const out = r.stdout + r.stderr;
				expect(out).toContain(`${manifestFile(dir)} is damaged: `);
				expect(out).toMatch(problem);
				expect(out).toContain(`npm run verify -- --data-dir ${dir} --chain ${CHAIN_ID} --restore-manifest`);
				expect(out).not.toMatch(/\n\s+at |TypeError|undefined/);
			}
			// No data file was removed as "unlisted" meanwhile.
			expect(existsSync(fileOf(dir, "blocks", chunkAt(clean, 20)))).toBe(true);
			if (!restoreAll && !restoreOf.has(name)) return;

			const restored = await verify(dir, "--restore-manifest");
			expect(restored.code, restored.stdout + restored.stderr).toBe(0);
			expect(restored.stdout).toContain(`${CHAIN_ID}: restored its manifest from the previous generation (6 ranges;`);
			// The previous generation is the one before the last save, which listed the holder ranks (a
			// backfill's last step, holder-ranks.ts): without them, a token's holders are summed from the
			// balance indexes until a writer ranks them again. Every dataset is as before.
			expect(manifestOf(dir).ranks ?? []).toEqual([]);
			expect(manifestOf(clean).ranks ?? []).toHaveLength(1);
			// (Its generation raised past every file's on disk: the ranks', named after the last save's.)
			expect(manifestOf(dir).generation).toBe(manifestOf(clean).generation);
			expect(await backfillHere(dir)).toContain("0 to fetch in 0 chunks");
			await expectVerifies(dir);
			expect(await datasetRows(dir, CHAIN)).toEqual(cleanRows);
		},
		// Three CLI runs in a row and a backfill, beside the other cases' on two shared cores.
		300_000,
	);

	it("without a sound previous generation, says so and what to do instead", async () => {
		const dir = await copyOfClean("manifest-noprev");
		writeFileSync(manifestFile(dir), "{");
		rmSync(join(dir, CHAIN_ID, "_manifest.prev.json"));
		const r = await verify(dir, "--restore-manifest");
		expect(r.code).toBe(1);
		expect(r.stderr).toContain(`error [MANIFEST_DAMAGED]: ${manifestFile(dir)} is damaged: it is not whole JSON`);
		expect(r.stderr).toContain("There is no sound previous generation");
		expect(r.stderr).toContain(`mv ${manifestFile(dir)} ${manifestFile(dir)}.damaged`);
	});

	// After the others: --restore-manifest takes the clean folder's write lock (its pid in _lock),
	// which a copy of the folder taken meanwhile would carry.
	it.sequential("a sound manifest is not restored over", async () => {
		const r = await verify(clean, "--restore-manifest");
		expect(r.code).toBe(2);
		expect(r.stderr).toContain("is sound: nothing to restore");
	});
});
