import type { SqlLimits } from "./sql-limits.js";
import { KILL_GRACE_MS } from "./sql-processes.js";
import { SqlRefusedError } from "./sql-refusals.js";

/**
 * The server answers every request within 30 s (api/server-timeouts.ts); a statement may wait
 * for a slot, then run its budget and the grace before its process is killed. 2 s are kept for
 * the answer's encoding and a process start.
 */
const ANSWER_BUDGET_MS = 28_000;

/** How long a statement may wait for a slot: its own time budget, less what the 30 s answer cannot spare. */
export const slotWaitMs = (limits: SqlLimits) =>
	Math.max(0, Math.min(limits.timeoutMs, ANSWER_BUDGET_MS - limits.timeoutMs - KILL_GRACE_MS));

/**
 * At most `limits.concurrency` statements at once (each in a process with its own memory cap, so
 * the SQL memory of the machine is bounded by their product), and at most `limits.keyConcurrency`
 * of one key (issue 27: one key sending bombs cannot hold every slot; its further statements wait
 * for its own, and the other slots go to other keys). Waiting statements start in arrival order,
 * skipping those whose key is at its own limit. One that cannot start within slotWaitMs is
 * refused as busy, not queued without end.
 */
export function sqlSlots(limits: SqlLimits) {
	const waitMs = slotWaitMs(limits);
	let running = 0;
	const byKey = new Map<string, number>();
	const waiting: { key: string; go: () => void }[] = [];
	const canRun = (key: string) => running < limits.concurrency && (byKey.get(key) ?? 0) < limits.keyConcurrency;

	function start(key: string): () => void {
		running++;
		byKey.set(key, (byKey.get(key) ?? 0) + 1);
		let released = false;
		return () => {
			if (released) return;
			released = true;
			running--;
			const left = (byKey.get(key) ?? 1) - 1;
			if (left > 0) byKey.set(key, left);
			else byKey.delete(key);
			dispatch();
		};
	}

	function dispatch() {
		for (let i = 0; i < waiting.length && running < limits.concurrency; ) {
			const w = waiting[i] as (typeof waiting)[number];
			if (canRun(w.key)) {
				waiting.splice(i, 1);
				w.go();
			} else i++;
		}
	}

	return {
		/** A slot for a statement of `key` (the caller's identity); resolves to its release. */
		async acquire(key = ""): Promise<() => void> {
			// Free now: every waiting statement's key is at its own limit (or it would have started).
			if (canRun(key)) return start(key);
			return new Promise((resolve, reject) => {
				const entry = {
					key,
					go: () => {
						clearTimeout(timer);
						resolve(start(key));
					},
				};
				const timer = setTimeout(() => {
					waiting.splice(waiting.indexOf(entry), 1);
					const own = byKey.get(key) ?? 0;
					reject(
						new SqlRefusedError(
							503,
							"BUSY",
							own >= limits.keyConcurrency
								? `this API key ran ${own} SQL statement${own > 1 ? "s" : ""} for the last ${waitMs / 1000} s, the most one key may run at once (${limits.keyConcurrency}): wait for its answers before sending more`
								: `the server ran other SQL statements for the last ${waitMs / 1000} s (${limits.concurrency} at a time): retry later`,
						),
					);
				}, waitMs);
				waiting.push(entry);
			});
		},
		/** Statements running now, in all and of `key` (tests, metrics). */
		running: (key?: string) => (key === undefined ? running : (byKey.get(key) ?? 0)),
	};
}
