import { rm } from "node:fs/promises";
import { ChainBreakError, createRangeFetcher, type FetchedRange, type Link } from "../backfill/fetch-range.js";
import { compareBlockHash, ethBlockNumber, ethChainId, ethGetBlockHash } from "../rpc/actions.js";
import type { RpcClient } from "../rpc/client.js";
import { detectTraceFormat, type TraceMode } from "../rpc/detect-traces.js";
import { metadataSource } from "../rpc/token-reads.js";
import type { TraceFormat } from "../rpc/types.js";
import {
	deriveIndexes,
	dropReturnedGhosts,
	hashNotIn,
	mergeChunkDatasets,
	removeUnlisted,
	replaceChunks,
	writeChunkFiles,
} from "../store/chunk-store.js";
import { type LakeSettings, lakeExporter } from "../store/delta/lake-export.js";
import { applyLakeFlags } from "../store/delta/lake-flags.js";
import { ranksDue, ranksStep } from "../store/holder-ranks.js";
import { alignedChunks, chainDir, partitionPath } from "../store/layout.js";
import { listedPaths } from "../store/listing.js";
import { acquireWriteLock } from "../store/lock.js";
import {
	type ChunkEntry,
	GHOST_DATASET,
	type GhostEntry,
	loadManifest,
	type Manifest,
	missingRanges,
	nextGeneration,
	saveManifest,
} from "../store/manifest.js";
import { headStep, mergeDue, mergeNext } from "../store/merges.js";
import { createParquetWriter, type ParquetWriter } from "../store/parquet-writer.js";
import { damagedChunks } from "../store/repair.js";
import { RETIRE_GRACE_MS } from "../store/retire-later.js";
import { dropRetired, noteRetired, pendingRetired } from "../store/retired-journal.js";
import { isFileError } from "../store/verify.js";
import type { ChainRef } from "../util/chain.js";
import { crashPoint } from "../util/crash-point.js";
import { freeSpace, isDiskFull } from "../util/disk-full.js";
import { UserInputError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";
import type { FollowerStats } from "./follower-stats.js";
import { sliceRows } from "./slice-rows.js";
import { writeStatus } from "./status-file.js";

/** Blocks this deep below the head are final: no reorg may reach them; their files are compacted. */
export const DEFAULT_FINALITY_DEPTH = 12;
/** Blocks fetched per step while catching up, so a long gap becomes a series of short commits. */
const MAX_BLOCKS_PER_STEP = 200;
/** Replaced files (reorged out, compacted) are deleted this long after the switch, so requests
 * that began on the previous file list can finish, in any process (with the Delta export on,
 * its retention keeps them longer still). */
export const DEFAULT_DELETE_GRACE_MS = RETIRE_GRACE_MS;
/** The longest wait between polls while the data folder's disk is full. */
export const DISK_FULL_MAX_BACKOFF_MS = 30_000;
/**
 * The steps' DuckDB (the Parquet writer) is replaced by a new one this often: a long-lived one's
 * native memory kept growing (npm start at a block every 500 ms: RSS 515 MB after 30 s, 911 MB
 * after 150 s; renewed every 30 s, 424 then 518 MB, the JavaScript heap at 70-85 MB in both).
 */
const WRITER_RENEW_MS = 30_000;
/** After a failed merge, the next attempt waits this long. */
const MERGE_RETRY_MS = 60_000;
/**
 * The follower's merge windows in a partition not yet complete are COMPACT_FAN_IN blocks, then
 * COMPACT_FAN_IN^2, ... (compact()): 32 by default, so a block is rewritten twice (its window,
 * then its partition), as before windows; the demo takes 4 (4, 16, 64, 256: fewer, larger files).
 */
export const DEFAULT_COMPACT_FAN_IN = 32;

export type FollowEvent =
	| { type: "blocks"; from: number; to: number }
	| { type: "reorg"; ancestor: number; orphaned: string[] }
	| { type: "compact"; from: number; to: number; files: number }
	| { type: "fault"; message: string };

/** A node of another chain than the one followed: one line naming both and the fix. */
export function wrongChainError(chainId: string, served: number, url?: string): UserInputError {
	const use = url ? `use --follow eip155-${served}=${url}` : `follow it as eip155-${served}`;
	return new UserInputError(
		"WRONG_CHAIN",
		`the node${url ? ` at ${url}` : ""} serves chain ${served} (eip155-${served}), not ${chainId}: ${use}, or give ${chainId} a node of that chain`,
	);
}

export interface FollowerOptions {
	rpc: RpcClient;
	chain: ChainRef;
	dataDir: string;
	logger: Logger;
	traces?: TraceMode;
	finalityDepth?: number;
	partitionSize?: number;
	/** Where to begin when nothing is stored yet (default 0: the whole history). */
	startBlock?: number;
	concurrency?: number;
	pollMs?: number;
	/** How long replaced files stay on disk for readers that began before the switch (default 5 minutes). */
	deleteGraceMs?: number;
	/** The smallest merge window of final head files, in blocks (DEFAULT_COMPACT_FAN_IN; at least 2). */
	compactFanIn?: number;
	/** The Delta Lake export's settings (delta/lake-flags.ts); kept in the manifest. */
	lake?: Partial<LakeSettings>;
}

/**
 * Tails a chain's head into the data folder. Each step: check the stored tip against the node
 * (a different hash there is a reorg: walk back to the common ancestor, swap the orphaned
 * ranges out in one manifest save, keep their blocks as ghosts), fill gaps, append new blocks
 * (final ones in aligned partitions, the last `finalityDepth` as one-block files), and compact
 * one-block files once final. A reorg deeper than `finalityDepth` is a node fault: logged
 * loudly and retried, never applied. Every change is committed by a manifest save, so a crash
 * at any point leaves the last committed state, and the next start resumes from it.
 */
export function createFollower(opts: FollowerOptions) {
	const { rpc, chain, dataDir, logger } = opts;
	const finality = opts.finalityDepth ?? DEFAULT_FINALITY_DEPTH;
	const partitionSize = opts.partitionSize ?? 1000;
	const fetcher = createRangeFetcher({ rpc, logger, concurrency: opts.concurrency ?? 8 });
	const metadata = metadataSource(rpc);
	const stats: FollowerStats = {
		nodeHead: null,
		storedHead: null,
		blocksIngested: 0,
		reorgs: 0,
		faults: 0,
		lastStepAt: null,
		lastFault: null,
		node: rpc.health,
		standby: null,
	};
	const pollMs = opts.pollMs ?? 1000;
	/**
	 * The writer's health for API processes that do not follow (status-file.ts), at most once a
	 * second (a fast poll would rewrite it many times a second); a failed write is no fault.
	 */
	let reportedAt = 0;
	const report = (stopped = false) => {
		if (!stopped && Date.now() - reportedAt < 1000) return;
		reportedAt = Date.now();
		try {
			writeStatus(dataDir, chain.id, { stats, rpcErrors: rpc.errors }, pollMs, stopped);
		} catch (err) {
			logger.warn(`follow ${chain.id}: could not write its status file: ${(err as Error).message}`);
		}
	};
	let state: {
		manifest: Manifest;
		writer: ParquetWriter;
		traces: TraceFormat | null;
		unlock: () => void;
		/** Check the files it reads itself for damage at the next step (at start, and after a read error). */
		recheck: boolean;
		/** Chunks with a damaged file, to fetch again. */
		damaged: ChunkEntry[];
	} | null = null;
	/** Retired files waiting for their grace period, with the time it ends. */
	const timers = new Map<NodeJS.Timeout, { due: number; run: () => void }>();
	/** Deletions under way, awaited by stop() so a clean stop does not leave half of them. */
	const deleting = new Set<Promise<void>>();

	let chainChecked = false;
	let writerSince = Date.now();
	async function init() {
		if (state) return state;
		// Another chain's node (a mistyped --follow) must not store a single block here.
		if (!chainChecked) {
			const served = await ethChainId(rpc);
			if (served !== chain.number) throw wrongChainError(chain.id, served);
			chainChecked = true;
		}
		const unlock = await acquireWriteLock(chainDir(dataDir, chain.id));
		try {
			const manifest = await loadManifest(dataDir, chain.id, chain.number);
			// Which chunks are settled, so their index files can be merged into runs (runs.ts).
			manifest.partition_size ??= partitionSize;
			if (applyLakeFlags(manifest, opts.lake ?? {})) await saveManifest(dataDir, manifest);
			const removed = await removeUnlisted(dataDir, manifest);
			if (removed.length > 0) logger.info(`removed ${removed.length} files of an interrupted run`);
			// Files an earlier run retired and kept for readers: deleted when they are due.
			const pending = new Map<number, string[]>();
			for (const [f, due] of pendingRetired(chainDir(dataDir, chain.id)))
				pending.set(due, [...(pending.get(due) ?? []), f]);
			for (const [due, files] of pending) retire(files, due);
			const head = await ethBlockNumber(rpc);
			const traces = head === 0 ? null : await detectTraceFormat(rpc, opts.traces ?? "auto", head, logger);
			const writer = await createParquetWriter();
			// Ghost files written before their hashes were recorded: read them once.
			// (A damaged one is left without: the first step unlists it, see ownDamage.)
			for (const g of manifest.ghosts ?? [])
				g.hashes ??= await writer
					.blockHashes([partitionPath(dataDir, chain.id, GHOST_DATASET, g)])
					.catch(() => undefined);
			logger.info(`follow ${chain.id}: ${startLine(manifest, head)}`);
			state = { manifest, writer, traces, unlock, recheck: true, damaged: [] };
			crashPoint("follow.started");
			return state;
		} catch (err) {
			unlock();
			throw err;
		}
	}

	/** Where this run begins, said once at start (`startBlock` counts only in an empty folder). */
	function startLine(m: Manifest, head: number): string {
		const first = sorted(m)[0];
		const tip = tipOf(m);
		if (first && tip) {
			const ignored =
				opts.startBlock !== undefined && opts.startBlock !== tip.to + 1
					? `; the start block asked for (${opts.startBlock}) counts only in an empty folder, so it is ignored${opts.startBlock < first.from ? ` (npm run backfill fills blocks ${opts.startBlock}..${first.from - 1})` : ""}`
					: "";
			return `the folder holds blocks ${first.from}..${tip.to}: resuming at block ${tip.to + 1} (node head ${head})${ignored}`;
		}
		const from = opts.startBlock ?? 0;
		const why = opts.startBlock === undefined ? " (the whole history: --from <n> starts elsewhere)" : "";
		return `the folder holds no blocks yet: starting at block ${from}${why} (node head ${head})`;
	}

	const sorted = (m: Manifest) => [...m.chunks].sort((a, b) => a.from - b.from);
	const tipOf = (m: Manifest) => sorted(m).at(-1);
	/** Notes, in the manifest about to be saved, that stored blocks up to `n` are final now. */
	const markFinal = (m: Manifest, n: number) => {
		if (n > (m.final_through ?? -1)) m.final_through = n;
	};

	const lake = lakeExporter(chainDir(dataDir, chain.id));
	/** Deletes `files` (just unlisted) after the grace, or at `due` (noted before a restart). */
	function retire(files: string[], due?: number) {
		const grace = due === undefined ? (opts.deleteGraceMs ?? DEFAULT_DELETE_GRACE_MS) : Math.max(0, due - Date.now());
		// Noted on disk, so a restart before they are due keeps them too (store/retired-journal.ts).
		if (due === undefined) noteRetired(chainDir(dataDir, chain.id), files, Date.now() + grace);
		const run = () => {
			timers.delete(t);
			// Unlisted since the manifest switch: a crash midway leaves files the next start removes.
			// Names are never reused (layout.ts); the check against what is listed now is the
			// second line of defence: a listed file is never deleted, whatever happened meanwhile.
			const live = state ? listedPaths(dataDir, state.manifest) : new Set<string>();
			const done = (async () => {
				for (const f of files) {
					if (live.has(f)) {
						logger.error(`not deleting ${f}: retired earlier, but the manifest lists it again`);
						continue;
					}
					// Removed from the Delta logs within their retention: the vacuum deletes it later.
					if (lake.retains(f)) continue;
					await rm(f, { force: true });
					crashPoint("follow.retire.file-removed");
				}
				dropRetired(chainDir(dataDir, chain.id), files);
			})().catch((err: unknown) => logger.warn(`could not delete replaced files: ${(err as Error).message}`));
			deleting.add(done);
			void done.finally(() => deleting.delete(done));
		};
		const t = setTimeout(run, grace);
		t.unref();
		timers.set(t, { due: Date.now() + grace, run });
	}

	// The manifest is changed by the step loop and by the commits of merges, which run beside
	// it; each change and its save happen alone.
	let queue: Promise<unknown> = Promise.resolve();
	const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
		const p = queue.then(fn);
		queue = p.catch(() => {});
		return p;
	};
	let merging: Promise<void> | null = null;
	let mergeRetryAt = 0;
	const caughtUp = () => stats.storedHead != null && stats.nodeHead != null && stats.storedHead >= stats.nodeHead;
	/**
	 * Merges settled chunks' index files into runs and their dataset files into larger chunks
	 * (merges.ts) with a DuckDB of its own, while the
	 * loop goes on following the head: a merge high in the tiers rewrites a lot, and head lag must
	 * not wait for it. Only the commit takes turns with the steps.
	 */
	function mergeInBackground(s: NonNullable<typeof state>) {
		if (merging || stopping || Date.now() < mergeRetryAt) return;
		if (!mergeDue(dataDir, s.manifest, metadata) && !ranksDue(dataDir, s.manifest)) return;
		merging = (async () => {
			const writer = await createParquetWriter();
			try {
				// One merge at a time, and none while the follower is behind: head lag comes first.
				while (!stopping && caughtUp()) {
					// The holder ranks once every merge is done (store/holder-ranks.ts), then the
					// balance deltas of the chunks not yet settled (which new blocks keep due).
					const gone =
						(await mergeNext(writer, dataDir, s.manifest, exclusive, metadata)) ??
						(await ranksStep(writer, dataDir, s.manifest, exclusive)) ??
						(await headStep(writer, dataDir, s.manifest, exclusive));
					if (!gone) break;
					retire(gone);
				}
			} finally {
				writer.close();
			}
		})()
			.catch((err: unknown) => {
				// Not at every poll: a full disk or a damaged input would fail the same way.
				mergeRetryAt = Date.now() + MERGE_RETRY_MS;
				logger.warn(`merge on ${chain.id} failed, retried in ${MERGE_RETRY_MS / 1000} s: ${(err as Error).message}`);
			})
			.finally(() => {
				merging = null;
			});
	}

	/** One poll: repair, reorg check, gap fill, append, compaction. Returns what changed. */
	async function step(): Promise<FollowEvent[]> {
		const s = await init();
		try {
			const events = await exclusive(() => stepOn(s));
			if (caughtUp()) mergeInBackground(s);
			return events;
		} catch (err) {
			// A file it read (compaction, a reorg's ghosts) is missing or cut short: check its own next step.
			if (isFileError(err)) s.recheck = true;
			throw err;
		}
	}

	async function stepOn(s: NonNullable<typeof state>): Promise<FollowEvent[]> {
		const events: FollowEvent[] = [];
		if (Date.now() - writerSince > WRITER_RENEW_MS) {
			const fresh = await createParquetWriter();
			s.writer.close();
			s.writer = fresh;
			writerSince = Date.now();
		}
		const head = await ethBlockNumber(rpc);
		stats.nodeHead = head;
		if (s.recheck) {
			s.damaged = await ownDamage(s, head);
			s.recheck = false;
		}
		// Damaged chunks are fetched again and swapped for the new ones in one save (no hole meanwhile).
		for (const d of [...s.damaged]) {
			const repaired = await append(s, d.from, d.to, head, d);
			if (!repaired) break;
			events.push(repaired);
			s.damaged = s.damaged.filter((c) => c !== d);
		}
		const tip = tipOf(s.manifest);
		// One odd answer (a lagging or forked backend of a pool) is not a reorg: compareBlockHash asks again.
		if (tip && (await compareBlockHash(rpc, tip.to, tip.last_hash)) === "different") {
			const reorg = await unwind(s, head);
			events.push(reorg);
			if (reorg.type === "fault") return events;
		}
		const holes =
			s.manifest.chunks.length > 0
				? missingRanges(s.manifest, sorted(s.manifest)[0]?.from ?? 0, tipOf(s.manifest)?.to ?? 0)
				: [];
		const next = tipOf(s.manifest)?.to ?? (opts.startBlock ?? 0) - 1;
		const todo = [...holes, ...(next < head ? [[next + 1, head] as [number, number]] : [])];
		let budget = MAX_BLOCKS_PER_STEP;
		for (const [from, to] of todo) {
			if (budget <= 0) break;
			const end = Math.min(to, from + budget - 1);
			budget -= end - from + 1;
			const appended = await append(s, from, end, head);
			if (appended) events.push(appended);
			else break;
		}
		const compacted = await compact(s, head);
		if (compacted) events.push(compacted);
		stats.storedHead = tipOf(s.manifest)?.to ?? null;
		stats.lastStepAt = Date.now();
		return events;
	}

	/**
	 * The chunks with a damaged file among those the follower reads itself: its ghosts, the blocks
	 * above the final mark (a reorg reads them), and every chunk that is not a whole partition
	 * (compaction merges them). Damaged ghosts are unlisted at once (repair.ts).
	 */
	async function ownDamage(s: NonNullable<typeof state>, head: number): Promise<ChunkEntry[]> {
		const finalThrough = s.manifest.final_through ?? head - finality;
		const wholePartition = (r: { from: number; to: number }) =>
			r.from % partitionSize === 0 && r.to - r.from + 1 === partitionSize;
		return damagedChunks(dataDir, s.manifest, (r, ghost) => ghost || r.to > finalThrough || !wholePartition(r), logger);
	}

	/**
	 * Fetches [from, to] and commits it: final blocks in aligned chunks, the rest one block per
	 * chunk; `replacing`: a damaged chunk of exactly that range, swapped out in the same save.
	 */
	async function append(
		s: NonNullable<typeof state>,
		from: number,
		to: number,
		head: number,
		replacing?: ChunkEntry,
	): Promise<FollowEvent | null> {
		// The node moved under us mid-fetch: the next step's reorg check sorts it out.
		const moved = () => {
			logger.warn(`blocks ${from}..${to} do not chain onto the stored data; retrying next step`);
			return null;
		};
		let fetched: FetchedRange;
		try {
			fetched = await fetcher.fetchRange(from, to, s.traces);
		} catch (err) {
			if (err instanceof ChainBreakError) return moved();
			throw err;
		}
		const { links, rows } = fetched;
		const before = s.manifest.chunks.find((c) => c.to === from - 1);
		if (before && links[0]?.parentHash !== before.last_hash) return moved();
		const after = replacing && s.manifest.chunks.find((c) => c.from === to + 1);
		if (after && links.at(-1)?.hash !== after.first_parent_hash) return moved();
		crashPoint("follow.append.fetched");
		const lastFinal = head - finality;
		const ranges = [
			...(from <= lastFinal ? alignedChunks(from, Math.min(to, lastFinal), partitionSize) : []),
			...Array.from({ length: Math.max(0, to - Math.max(from, lastFinal + 1) + 1) }, (_, i) => {
				const n = Math.max(from, lastFinal + 1) + i;
				return [n, n] as [number, number];
			}),
		];
		const entries: ChunkEntry[] = [];
		for (const [a, b] of ranges) {
			const first = links[a - from] as Link;
			const last = links[b - from] as Link;
			entries.push(
				await writeChunkFiles(
					s.writer,
					dataDir,
					chain.id,
					{
						from: a,
						to: b,
						traces: s.traces,
						firstParentHash: first.parentHash,
						lastHash: last.hash,
						gen: nextGeneration(s.manifest),
					},
					sliceRows(rows, a, b),
				),
			);
			crashPoint("follow.append.chunk-written");
		}
		markFinal(s.manifest, Math.min(to, lastFinal));
		// Blocks a reorg dropped and the chain took back leave the ghosts in the same save.
		const returned = await dropReturnedGhosts(s.writer, dataDir, s.manifest, new Set(links.map((l) => l.hash)));
		const replaced = await replaceChunks(dataDir, s.manifest, replacing ? [replacing] : [], entries);
		crashPoint("follow.append.committed");
		retire([...returned, ...replaced]);
		stats.blocksIngested += to - from + 1;
		return { type: "blocks", from, to };
	}

	/**
	 * Walks back from the stored tip to the newest stored range whose last block the node still
	 * has, then swaps every range above it out (their blocks kept as ghosts). The canonical
	 * blocks are appended by the same step.
	 */
	async function unwind(s: NonNullable<typeof state>, head: number): Promise<FollowEvent> {
		const orphaned: ChunkEntry[] = [];
		for (const c of sorted(s.manifest).reverse()) {
			if ((await compareBlockHash(rpc, c.to, c.last_hash)) !== "different") break;
			orphaned.push(c);
		}
		const lowest = orphaned.at(-1)?.from ?? 0;
		// Measured against what was final when stored, not against today's head: after a crash or
		// any downtime the node has moved on, and blocks stored as non-final (then reorged out)
		// may now lie deeper than the finality depth; refusing them would stall the follower for good.
		const finalThrough = s.manifest.final_through ?? head - finality;
		if (orphaned.length === s.manifest.chunks.length || lowest <= finalThrough) {
			stats.faults++;
			const message = `node fault on ${chain.id}: its chain differs from the stored one at or below block ${lowest}, which was stored as final (through block ${finalThrough}, finality depth ${finality}, head ${head}); not applied, retrying`;
			logger.error(message);
			stats.lastFault = { at: Date.now(), message };
			return { type: "fault", message };
		}
		crashPoint("follow.reorg.detected");
		// Keep the blocks that left the canonical chain, so their hashes still answer (ghost: true).
		const canonical = new Set<string>();
		for (let n = lowest; n <= (orphaned[0]?.to ?? lowest); n++) {
			const h = await ethGetBlockHash(rpc, n);
			if (h) canonical.add(h);
		}
		const blockFiles = orphaned.map((c) => partitionPath(dataDir, chain.id, "blocks", c));
		const ghost: GhostEntry = {
			from: lowest,
			to: orphaned[0]?.to ?? lowest,
			last_hash: orphaned[0]?.last_hash ?? "0x",
			gen: nextGeneration(s.manifest),
		};
		const ghostPath = partitionPath(dataDir, chain.id, GHOST_DATASET, ghost);
		await s.writer.merge("blocks", blockFiles, ghostPath, hashNotIn(canonical));
		ghost.hashes = await s.writer.blockHashes([ghostPath]);
		crashPoint("follow.reorg.ghosts-written");
		s.manifest.ghosts = [...(s.manifest.ghosts ?? []), ghost];
		const replaced = await replaceChunks(dataDir, s.manifest, orphaned, []);
		crashPoint("follow.reorg.committed");
		retire(replaced);
		stats.reorgs++;
		const ancestor = lowest - 1;
		logger.warn(`reorg on ${chain.id}: blocks ${lowest}..${ghost.to} replaced (common ancestor ${ancestor})`);
		return { type: "reorg", ancestor, orphaned: orphaned.map((c) => c.last_hash) };
	}

	/**
	 * Merges final chunks so head files do not pile up: a partition's chunks into one file once
	 * the whole partition is stored and final, and before that, aligned windows of the partition
	 * (`compactFanIn` blocks, then its square, ...: 32 by default; 4, 16, 64, 256 with 4, in a
	 * partition of 1000) once a window is final and held by several chunks, the largest first. Windows
	 * are aligned to block numbers, not to the chunks in them, so the chunks a lagging follower
	 * appends several blocks at a time (a range of final blocks, then one-block chunks) merge like
	 * the others: a chunk across a window's edge only waits for the next larger window. A partition's
	 * tail stays under `compactFanIn` chunks per window size, and a block is rewritten once per
	 * window size. (Runs of 32 one-block chunks, before: one chunk of several blocks, which a
	 * follower more than the finality depth behind appends, broke every run after it until the
	 * partition was complete; the demo's head files piled up so.)
	 */
	async function compact(s: NonNullable<typeof state>, head: number): Promise<FollowEvent | null> {
		const lastFinal = head - finality;
		const groups = new Map<number, ChunkEntry[]>();
		for (const c of sorted(s.manifest)) {
			if (c.to > lastFinal) continue;
			const p = Math.floor(c.from / partitionSize);
			if (Math.floor(c.to / partitionSize) !== p) continue;
			groups.set(p, [...(groups.get(p) ?? []), c]);
		}
		const windows: number[] = [];
		const fanIn = Math.max(2, opts.compactFanIn ?? DEFAULT_COMPACT_FAN_IN);
		for (let w = fanIn; w < partitionSize; w *= fanIn) windows.unshift(w);
		for (const [p, group] of groups) {
			const start = p * partitionSize;
			const end = start + partitionSize - 1;
			/** The chunks holding exactly [a, b], every block, with one trace format; null if not so. */
			const held = (a: number, b: number): ChunkEntry[] | null => {
				if (group.some((c) => (c.from < a && c.to >= a) || (c.from <= b && c.to > b))) return null;
				const inside = group.filter((c) => c.from >= a && c.to <= b);
				if (inside.length < 2 || new Set(inside.map((c) => c.traces)).size !== 1) return null;
				return missingRanges({ ...s.manifest, chunks: inside }, a, b).length === 0 ? inside : null;
			};
			let run = held(start, end);
			for (const size of run ? [] : windows) {
				for (let a = start; !run && a + size - 1 <= Math.min(end, lastFinal); a += size) run = held(a, a + size - 1);
				if (run) break;
			}
			if (!run) continue;
			const merged = await mergeChunkDatasets(s.writer, dataDir, chain.id, run, nextGeneration(s.manifest), () =>
				crashPoint("follow.compact.dataset-merged"),
			);
			await deriveIndexes(s.writer, dataDir, chain.id, merged);
			crashPoint("follow.compact.files-written");
			markFinal(s.manifest, merged.to);
			const replaced = await replaceChunks(dataDir, s.manifest, run, [merged]);
			crashPoint("follow.compact.swapped");
			retire(replaced);
			return { type: "compact", from: merged.from, to: merged.to, files: run.length };
		}
		return null;
	}

	let running: Promise<void> | null = null;
	let stopping = false;
	/** Ends the wait between polls at once (stop() must not sit out a disk-full backoff). */
	let wake = () => {};
	const pause = (ms: number) =>
		new Promise<void>((resolve) => {
			const t = setTimeout(resolve, ms);
			wake = () => {
				clearTimeout(t);
				resolve();
			};
		});
	/**
	 * The disk (or quota) holding the data folder is full: said once, with the folder and its free
	 * space; the next polls wait twice as long each time, up to DISK_FULL_MAX_BACKOFF_MS, and the
	 * first step that succeeds again says so. Nothing to restart: a failed step commits nothing.
	 */
	let diskFull: { since: number; attempts: number } | null = null;
	async function onDiskFull(err: unknown): Promise<number> {
		if (!diskFull) {
			diskFull = { since: Date.now(), attempts: 0 };
			logger.error(
				`follow ${chain.id}: disk full: cannot write to ${dataDir} (${await freeSpace(dataDir)}): ${(err as Error).message}; retrying with backoff up to ${DISK_FULL_MAX_BACKOFF_MS / 1000} s until space is freed`,
			);
		}
		diskFull.attempts++;
		return Math.min(DISK_FULL_MAX_BACKOFF_MS, Math.max(opts.pollMs ?? 1000, 1000) * 2 ** (diskFull.attempts - 1));
	}
	async function onDiskBack(): Promise<void> {
		if (!diskFull) return;
		const secs = ((Date.now() - diskFull.since) / 1000).toFixed(0);
		logger.info(
			`follow ${chain.id}: writing to ${dataDir} again (${await freeSpace(dataDir)}) after ${secs} s and ${diskFull.attempts} attempts on a full disk`,
		);
		diskFull = null;
	}

	return {
		stats,
		step,
		/** Polls until stop(); `onEvent` sees every change. Errors are logged and retried next poll
		 * (a full disk: logged once, retried with backoff). */
		start(onEvent: (e: FollowEvent) => void = () => {}) {
			running = (async () => {
				while (!stopping) {
					let wait = pollMs;
					try {
						const events = await step();
						if (stats.standby) logger.info(`follow ${chain.id}: took over writing (the other writer stopped)`);
						stats.standby = null;
						for (const e of events) onEvent(e);
						// Only a step that wrote shows the disk has room again (one without new blocks writes nothing).
						if (events.some((e) => e.type !== "fault")) await onDiskBack();
					} catch (err) {
						const full = isDiskFull(err);
						const message = (err as Error).message;
						if ((err as { code?: string }).code === "DATA_DIR_LOCKED") {
							// One writer, many readers: not a fault, said once.
							if (!stats.standby) logger.info(`follow ${chain.id}: ${message}; standing by to take over`);
							stats.standby = message;
						} else {
							stats.faults++;
							stats.lastFault = { at: Date.now(), message: full ? `disk full in ${dataDir}: ${message}` : message };
							if (full) wait = await onDiskFull(err);
							else logger.error(`follow ${chain.id}: ${message}`);
						}
					}
					if (!stats.standby) report();
					if (!stopping) await pause(wait);
				}
			})();
		},
		/** Resolves when no index merge is under way (tests, and stop()). */
		async merges() {
			while (merging) await merging;
		},
		async stop() {
			stopping = true;
			wake();
			await running;
			await merging;
			// Deletions already due run now; the others are left to the next start (noted in
			// `_retired.json`), as readers may still be on those files.
			for (const [t, { due, run }] of timers) {
				clearTimeout(t);
				if (due <= Date.now()) run();
			}
			await Promise.all(deleting);
			if (state) report(true);
			state?.writer.close();
			state?.unlock();
			state = null;
		},
	};
}
