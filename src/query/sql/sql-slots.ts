import type { SqlLimits } from "./sql-limits.js";
import { SqlRefusedError } from "./sql-refusals.js";

/**
 * At most `limits.concurrency` statements at once (each holds its own memory_limit, so the
 * process's SQL memory is bounded by their product); a statement that cannot start within its
 * time budget is refused as busy, not queued without end.
 */
export function sqlSlots(limits: SqlLimits) {
	let free = limits.concurrency;
	const waiting: (() => void)[] = [];
	const release = () => {
		const next = waiting.shift();
		if (next) next();
		else free++;
	};
	return {
		async acquire(): Promise<() => void> {
			if (free > 0) {
				free--;
				return release;
			}
			return new Promise((resolve, reject) => {
				const go = () => {
					clearTimeout(timer);
					resolve(release);
				};
				const timer = setTimeout(() => {
					waiting.splice(waiting.indexOf(go), 1);
					reject(
						new SqlRefusedError(
							503,
							"BUSY",
							`the server ran other SQL statements for the last ${limits.timeoutMs / 1000} s (${limits.concurrency} at a time): retry later`,
						),
					);
				}, limits.timeoutMs);
				waiting.push(go);
			});
		},
	};
}
