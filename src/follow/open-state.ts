import { ethBlockNumber } from "../rpc/actions.js";
import { detectTraceFormat } from "../rpc/detect-traces.js";
import { applyLakeFlags } from "../store/delta/lake-flags.js";
import { saveManifest } from "../store/delta/save-manifest.js";
import { acquireWriteLock } from "../store/files/lock.js";
import { createParquetWriter } from "../store/files/parquet-writer.js";
import { chainDir, partitionPath } from "../store/format/layout.js";
import { GHOST_DATASET, loadManifest } from "../store/format/manifest.js";
import type { Manifest } from "../store/format/records.js";
import { removeUnlisted } from "../store/retire/remove-unlisted.js";
import { pendingRetired } from "../store/retire/retired-journal.js";
import { crashPoint } from "../util/crash-point.js";
import { type FollowContext, type FollowState, sortedChunks, tipOf } from "./follow-context.js";

/*
 * A follower's start on a chain's folder: the write lock, the manifest (its settings brought up
 * to date), the leftovers of an interrupted run removed, the files an earlier run retired put back
 * on their timers, the trace source, and the steps' Parquet writer.
 */

/** Takes the chain's write lock and opens the run's state; the lock is released if that fails. */
export async function openFollowState(ctx: FollowContext): Promise<FollowState> {
	const { rpc, chain, dataDir, logger, opts, partitionSize, retire } = ctx;
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
		// (A damaged one is left without: the first step unlists it, see ownDamage in follower.ts.)
		for (const g of manifest.ghosts ?? [])
			g.hashes ??= await writer
				.blockHashes([partitionPath(dataDir, chain.id, GHOST_DATASET, g)])
				.catch(() => undefined);
		logger.info(`follow ${chain.id}: ${startLine(ctx, manifest, head)}`);
		const state: FollowState = { manifest, writer, traces, unlock, recheck: true, damaged: [] };
		crashPoint("follow.started");
		return state;
	} catch (err) {
		unlock();
		throw err;
	}
}

/** Where this run begins, said once at start (`startBlock` counts only in an empty folder). */
function startLine({ opts }: FollowContext, m: Manifest, head: number): string {
	const first = sortedChunks(m)[0];
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
