import { type Damage, damageLine } from "../store/repair/damage.js";
import type { Logger } from "../util/logger.js";
import { DAMAGE_MAX_BACKOFF_MS } from "./follower-options.js";

/*
 * A follower that meets a damaged listed file it cannot fix itself (a settled chunk's, a merged
 * run's: the backfill or reindex repairs those, with the follower stopped) says so in one line,
 * naming the file relative to the data folder and the command, and the work that read it (its
 * steps, or its merges) waits twice as long each time, up to DAMAGE_MAX_BACKOFF_MS. The other
 * work goes on: new blocks are appended while a merge waits. Once the work succeeds again (a
 * repair listed a sound file), one line says so and the waits start over.
 */

export type DamagedWork = "steps" | "merges";

export function createDamageBackoff(opts: { chainId: string; logger: Logger; pollMs?: number }) {
	const { chainId, logger } = opts;
	const base = Math.max(opts.pollMs ?? 1000, 1000);
	const attempts = new Map<DamagedWork, number>();
	/** Files named already (one line per file, whichever work met it). */
	const said = new Set<string>();
	return {
		/** `work` failed on `damage`: says so once per file; returns the wait before it tries again. */
		onDamage(work: DamagedWork, damage: Damage): number {
			const n = (attempts.get(work) ?? 0) + 1;
			attempts.set(work, n);
			if (!said.has(damage.file)) {
				said.add(damage.file);
				logger.error(
					`follow ${chainId}: ${damageLine(damage)} with this follower stopped (the repair takes the chain's write lock), then start it again; until then its ${work} wait, retried with backoff up to ${DAMAGE_MAX_BACKOFF_MS / 1000} s`,
				);
			}
			const wait = Math.min(DAMAGE_MAX_BACKOFF_MS, base * 2 ** (n - 1));
			// (Each attempt only with --verbose: the line above said what and why.)
			logger.debug(`follow ${chainId}: its ${work} wait ${wait} ms for a damaged file (attempt ${n})`);
			return wait;
		},
		/** `work` succeeded: if it had waited for a damaged file, says so once. */
		onClear(work: DamagedWork): void {
			const n = attempts.get(work);
			if (n === undefined) return;
			attempts.delete(work);
			if (attempts.size === 0) said.clear();
			logger.info(`follow ${chainId}: its ${work} go on: the damaged file they waited for is repaired (${n} attempts)`);
		},
	};
}
