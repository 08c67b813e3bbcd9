import type { metadataSource } from "../rpc/token-reads.js";
import { headStep, mergeDue, mergeNext } from "../store/chunks/merges.js";
import { createParquetWriter } from "../store/files/parquet-writer.js";
import { headRanksDue, headRanksStep } from "../store/holdings/head-ranks.js";
import { ranksDue, ranksStep } from "../store/holdings/holder-ranks.js";
import { damageBehind } from "../store/repair/damage.js";
import { freeSpace, isDiskFull } from "../util/disk-full.js";
import type { Logger } from "../util/logger.js";
import type { createDamageBackoff } from "./damage-backoff.js";
import type { FollowState } from "./follow-context.js";

/*
 * The follower's merges (index runs, larger chunks, holder ranks, head deltas) run beside its
 * steps, with a DuckDB of their own, so head lag never waits for a large merge; only their
 * commits take turns with the steps.
 */

/** After a failed merge, the next attempt waits this long. */
const MERGE_RETRY_MS = 60_000;

export function createBackgroundMerges(opts: {
	dataDir: string;
	chainId: string;
	logger: Logger;
	metadata: ReturnType<typeof metadataSource>;
	/** Runs a commit alone, between the steps' own changes of the manifest. */
	exclusive: <T>(fn: () => Promise<T>) => Promise<T>;
	retire: (files: string[]) => void;
	/** The follower has stored up to the node's head. */
	caughtUp: () => boolean;
	/** stop() has begun: no merge starts, and the one under way ends after its current step. */
	stopping: () => boolean;
	/** A damaged file a merge read: said once, retried with backoff (damage-backoff.ts). */
	damage: ReturnType<typeof createDamageBackoff>;
	/** After a failed merge, the next attempt waits this long (default MERGE_RETRY_MS; tests: less). */
	retryMs?: number;
}) {
	const { dataDir, chainId, logger, metadata, exclusive, retire, caughtUp, stopping, damage } = opts;
	let merging: Promise<void> | null = null;
	let mergeRetryAt = 0;
	/** Merges failed on a full disk since this time (said once, and once more when all due are done). */
	let diskFullSince: number | null = null;
	/**
	 * Merges settled chunks' index files into runs and their dataset files into larger chunks
	 * (merges.ts) with a DuckDB of its own, while the
	 * loop goes on following the head: a merge high in the tiers rewrites a lot, and head lag must
	 * not wait for it. Only the commit takes turns with the steps.
	 */
	function mergeInBackground(s: FollowState) {
		if (merging || stopping() || Date.now() < mergeRetryAt) return;
		if (
			!mergeDue(dataDir, s.manifest, metadata) &&
			!ranksDue(dataDir, s.manifest) &&
			!headRanksDue(dataDir, s.manifest)
		)
			return;
		merging = (async () => {
			const writer = await createParquetWriter();
			try {
				// One merge at a time, and none while the follower is behind: head lag comes first.
				while (!stopping() && caughtUp()) {
					// The holder ranks once every merge is done (store/holdings/holder-ranks.ts), then the
					// balance deltas of the chunks not yet settled (which new blocks keep due), then the
					// busy tokens' head ranks over those (store/holdings/head-ranks.ts).
					const gone =
						(await mergeNext(writer, dataDir, s.manifest, exclusive, metadata)) ??
						(await ranksStep(writer, dataDir, s.manifest, exclusive)) ??
						(await headStep(writer, dataDir, s.manifest, exclusive)) ??
						(await headRanksStep(writer, dataDir, s.manifest, exclusive));
					if (!gone) {
						// Every merge due is done (not only one that read no damaged file): none waits any more.
						damage.onClear("merges");
						// (Said once all are done: on a nearly full disk a small one may pass and a large one fail.)
						if (diskFullSince !== null) {
							logger.info(
								`merges on ${chainId}: writing to ${dataDir} again (${await freeSpace(dataDir)}) after ${((Date.now() - diskFullSince) / 1000).toFixed(0)} s on a full disk`,
							);
							diskFullSince = null;
						}
						break;
					}
					retire(gone);
				}
			} finally {
				writer.close();
			}
		})()
			.catch(async (err: unknown) => {
				// Not at every poll: a full disk or a damaged input would fail the same way.
				const retryMs = opts.retryMs ?? MERGE_RETRY_MS;
				// Said as the steps say it (the folder, its free space), and once: DuckDB's own words for
				// a full disk, every minute, named neither.
				if (isDiskFull(err)) {
					mergeRetryAt = Date.now() + retryMs;
					if (diskFullSince === null)
						logger.error(
							`merges on ${chainId}: disk full: cannot write to ${dataDir} (${await freeSpace(dataDir)}): ${(err as Error).message}; retried every ${retryMs / 1000} s until space is freed`,
						);
					diskFullSince ??= Date.now();
					return;
				}
				// Another failure ends a full disk's episode: its line would count time that was not one.
				diskFullSince = null;
				const damaged = await damageBehind(dataDir, s.manifest, err).catch(() => null);
				if (damaged) {
					mergeRetryAt = Date.now() + damage.onDamage("merges", damaged);
					return;
				}
				mergeRetryAt = Date.now() + retryMs;
				logger.warn(`merge on ${chainId} failed, retried in ${retryMs / 1000} s: ${(err as Error).message}`);
			})
			.finally(() => {
				merging = null;
			});
	}

	return {
		mergeInBackground,
		/** The merge under way, or null. */
		current: () => merging,
	};
}
