import type { Manifest } from "../store/format/records.js";
import { damageBehind, damageLine } from "../store/repair/damage.js";
import { removeUnlisted } from "../store/retire/remove-unlisted.js";
import type { Logger } from "../util/logger.js";

/*
 * The backfill's merges (index runs, chunk merges, metadata, holder ranks) read settled files the
 * run does not fetch. A damaged one among them (outside the range the backfill repairs) is no
 * reason to fail the blocks it was asked for: the merges stop for the rest of the run, one line
 * names the file and its repair, and they stay due for the next writer. What the stopped merge had
 * written goes at once (it is unlisted), so nothing half-done is left.
 */

export function createMergeGuard(dataDir: string, manifest: () => Manifest, logger: Logger) {
	let stopped = false;
	return {
		/** Runs `merge` unless a damaged file stopped the merges; null when it did (now or before). */
		async run<T>(merge: () => Promise<T>): Promise<T | null> {
			if (stopped) return null;
			try {
				return await merge();
			} catch (err) {
				const damage = await damageBehind(dataDir, manifest(), err);
				if (!damage) throw err;
				stopped = true;
				logger.warn(
					`merges stopped for this run (they stay due for the next writer): ${damageLine(damage)}, then run this backfill again`,
				);
				await removeUnlisted(dataDir, manifest());
				return null;
			}
		},
	};
}
