import { createRangeFetcher } from "../backfill/fetch-range.js";
import { compareBlockHash, ethBlockNumber, ethChainId } from "../rpc/actions.js";
import { metadataSource } from "../rpc/token-reads.js";
import { createParquetWriter } from "../store/files/parquet-writer.js";
import { missingRanges } from "../store/format/manifest.js";
import { isFileError } from "../store/format/parquet-shape.js";
import type { ChunkEntry } from "../store/format/records.js";
import { damageBehind, damageLine } from "../store/repair/damage.js";
import { damagedChunks } from "../store/repair/repair.js";
import { isDiskFull } from "../util/disk-full.js";
import { appendBlocks } from "./append-blocks.js";
import { createBackgroundMerges } from "./background-merges.js";
import { compactFinal } from "./compact-final.js";
import { createDamageBackoff } from "./damage-backoff.js";
import { createDiskFullBackoff } from "./disk-full-backoff.js";
import { type FollowContext, type FollowEvent, type FollowState, sortedChunks, tipOf } from "./follow-context.js";
import { DEFAULT_FINALITY_DEPTH, type FollowerOptions } from "./follower-options.js";
import type { FollowerStats } from "./follower-stats.js";
import { openFollowState } from "./open-state.js";
import { createRetirer } from "./retire-files.js";
import { writeStatus } from "./status-file.js";
import { unwindReorg } from "./unwind-reorg.js";
import { wrongChainError } from "./wrong-chain-error.js";

/*
 * The follower itself: its poll loop, the order of one step, and the start and stop around them.
 * What a step does lives beside it: append-blocks.ts, unwind-reorg.ts, compact-final.ts (and
 * background-merges.ts, which runs beside the steps); the run's start is open-state.ts, the
 * deletion of replaced files retire-files.ts, the settings follower-options.ts.
 */

/** Blocks fetched per step while catching up, so a long gap becomes a series of short commits. */
const MAX_BLOCKS_PER_STEP = 200;
/**
 * The steps' DuckDB (the Parquet writer) is replaced by a new one this often: a long-lived one's
 * native memory kept growing (npm start at a block every 500 ms: RSS 515 MB after 30 s, 911 MB
 * after 150 s; renewed every 30 s, 424 then 518 MB, the JavaScript heap at 70-85 MB in both).
 */
const WRITER_RENEW_MS = 30_000;

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
	let state: FollowState | null = null;
	const retirer = createRetirer({
		dataDir,
		chainId: chain.id,
		logger,
		deleteGraceMs: opts.deleteGraceMs,
		manifest: () => state?.manifest ?? null,
	});
	const ctx: FollowContext = {
		rpc,
		chain,
		dataDir,
		logger,
		opts,
		finality,
		partitionSize,
		fetcher,
		stats,
		retire: retirer.retire,
	};

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
		state = await openFollowState(ctx);
		return state;
	}

	// The manifest is changed by the step loop and by the commits of merges, which run beside
	// it; each change and its save happen alone.
	let queue: Promise<unknown> = Promise.resolve();
	const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
		const p = queue.then(fn);
		queue = p.catch(() => {});
		return p;
	};
	let running: Promise<void> | null = null;
	let stopping = false;
	const caughtUp = () => stats.storedHead != null && stats.nodeHead != null && stats.storedHead >= stats.nodeHead;
	const damage = createDamageBackoff({ chainId: chain.id, logger, pollMs: opts.pollMs });
	const background = createBackgroundMerges({
		dataDir,
		chainId: chain.id,
		logger,
		metadata,
		exclusive,
		retire: retirer.retire,
		caughtUp,
		stopping: () => stopping,
		damage,
	});

	/** One poll: repair, reorg check, gap fill, append, compaction. Returns what changed. */
	async function step(): Promise<FollowEvent[]> {
		const s = await init();
		try {
			const events = await exclusive(() => stepOn(s));
			if (caughtUp()) background.mergeInBackground(s);
			return events;
		} catch (err) {
			// A file it read (compaction, a reorg's ghosts) is missing or cut short: check its own next step.
			if (isFileError(err)) s.recheck = true;
			throw err;
		}
	}

	async function stepOn(s: FollowState): Promise<FollowEvent[]> {
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
			// (Added to those a failed step named: see onStepDamage.)
			s.damaged = [...new Set([...s.damaged, ...(await ownDamage(s, head))])];
			s.recheck = false;
		}
		// Damaged chunks are fetched again and swapped for the new ones in one save (no hole meanwhile).
		// (One a merge replaced meanwhile is gone from the manifest: nothing left to repair.)
		s.damaged = s.damaged.filter((c) => s.manifest.chunks.includes(c));
		for (const d of [...s.damaged]) {
			const repaired = await appendBlocks(ctx, s, d.from, d.to, head, d);
			if (!repaired) break;
			events.push(repaired);
			s.damaged = s.damaged.filter((c) => c !== d);
		}
		const tip = tipOf(s.manifest);
		// One odd answer (a lagging or forked backend of a pool) is not a reorg: compareBlockHash asks again.
		if (tip && (await compareBlockHash(rpc, tip.to, tip.last_hash)) === "different") {
			const reorg = await unwindReorg(ctx, s, head);
			events.push(reorg);
			if (reorg.type === "fault") return events;
		}
		const holes =
			s.manifest.chunks.length > 0
				? missingRanges(s.manifest, sortedChunks(s.manifest)[0]?.from ?? 0, tipOf(s.manifest)?.to ?? 0)
				: [];
		const next = tipOf(s.manifest)?.to ?? (opts.startBlock ?? 0) - 1;
		const todo = [...holes, ...(next < head ? [[next + 1, head] as [number, number]] : [])];
		let budget = MAX_BLOCKS_PER_STEP;
		for (const [from, to] of todo) {
			if (budget <= 0) break;
			const end = Math.min(to, from + budget - 1);
			budget -= end - from + 1;
			const appended = await appendBlocks(ctx, s, from, end, head);
			if (appended) events.push(appended);
			else break;
		}
		const compacted = await compactFinal(ctx, s, head);
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
	async function ownDamage(s: FollowState, head: number): Promise<ChunkEntry[]> {
		return damagedChunks(dataDir, s.manifest, readsItself(s, head), logger);
	}
	const readsItself = (s: FollowState, head: number) => {
		const finalThrough = s.manifest.final_through ?? head - finality;
		const wholePartition = (r: { from: number; to: number }) =>
			r.from % partitionSize === 0 && r.to - r.from + 1 === partitionSize;
		return (r: { from: number; to: number }, ghost: boolean) => ghost || r.to > finalThrough || !wholePartition(r);
	};

	/**
	 * A step failed reading a damaged listed file: the wait before the next step. One it reads
	 * itself is fetched again at the next step (s.recheck, set by step()); another (a settled
	 * chunk's, a run's) it cannot fix: said once, retried with backoff (damage-backoff.ts).
	 */
	async function onStepDamage(err: unknown): Promise<number | null> {
		const s = state;
		const damaged = s && isFileError(err) ? await damageBehind(dataDir, s.manifest, err).catch(() => null) : null;
		if (!s || !damaged) return null;
		stats.lastFault = { at: Date.now(), message: damageLine(damaged) };
		const own =
			damaged.kind !== "run" &&
			readsItself(s, stats.nodeHead ?? 0)({ from: damaged.from, to: damaged.to }, damaged.kind === "ghost");
		// Met again after a refetch was tried: not one it can fix after all (a loop of refetches
		// would log at every poll).
		if (own && refetching !== damaged.file) {
			refetching = damaged.file;
			// Its chunk to the damaged ones directly: a page damaged mid-file passes the recheck's cheap check.
			const chunk = s.manifest.chunks.find((c) => c.from === damaged.from && c.to === damaged.to);
			if (chunk && !s.damaged.includes(chunk)) s.damaged.push(chunk);
			logger.warn(
				`follow ${chain.id}: ${damaged.file} (blocks ${damaged.from}..${damaged.to}) is damaged (${damaged.problem}): fetching those blocks again at the next step`,
			);
			return pollMs;
		}
		return damage.onDamage("steps", damaged);
	}
	/** The damaged file of its own a step met last, fetched again at the next step. */
	let refetching: string | null = null;

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
	const { onDiskFull, onDiskBack } = createDiskFullBackoff({ chainId: chain.id, dataDir, logger, pollMs: opts.pollMs });

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
						damage.onClear("steps");
						refetching = null;
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
							const damaged = full ? null : await onStepDamage(err);
							if (full) wait = await onDiskFull(err);
							else if (damaged !== null) wait = damaged;
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
			while (background.current()) await background.current();
		},
		async stop() {
			stopping = true;
			wake();
			await running;
			await background.current();
			// Deletions already due run now; the others are left to the next start (noted in
			// `_retired.json`), as readers may still be on those files.
			await retirer.stop();
			if (state) report(true);
			state?.writer.close();
			state?.unlock();
			state = null;
		},
	};
}
