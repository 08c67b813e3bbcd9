/*
 * What an RPC client has seen of its node(s): attempts and failures, per second over the last
 * minute, for readiness (/readyz: ok, degraded, down) and metrics. Its own file: the client
 * fills it in (recordAttempt), the API's health routes and the follower's figures read it.
 */

/** How far back the health figures look, for "is the node faulty now" rather than "ever". */
const HEALTH_WINDOW_S = 60;
/** Nothing but failures for this long: the node is down, not just flaky. */
const DOWN_AFTER_MS = 30_000;

/** What the client has seen of its node(s), for readiness and metrics. Updated in place. */
export interface RpcHealth {
	/** Attempts sent, and those that failed (including answers found wrong, see `reportFault`). */
	attempts: number;
	failures: number;
	/** When the current run of failed attempts began (null once one succeeds). */
	failingSince: number | null;
	lastError: { at: number; kind: string; message: string } | null;
	/** Per second of the last HEALTH_WINDOW_S: [unix second, attempts, failures]. */
	recent: [number, number, number][];
}

/**
 * Counts one attempt into the health figures (and a failure into `errors`, by kind); `failure`
 * names its kind and what happened, null for a success; `counted` false: a failure that was no
 * attempt of its own (an answer found wrong).
 */
export function recordAttempt(
	health: RpcHealth,
	errors: Record<string, number>,
	failure: { kind: string; message: string } | null,
	counted = true,
): void {
	const now = Date.now();
	const second = Math.floor(now / 1000);
	let bucket = health.recent.at(-1);
	if (bucket?.[0] !== second) {
		bucket = [second, 0, 0];
		health.recent.push(bucket);
		while ((health.recent[0]?.[0] ?? second) <= second - HEALTH_WINDOW_S) health.recent.shift();
	}
	if (counted) {
		health.attempts++;
		bucket[1]++;
	}
	if (!failure) {
		health.failingSince = null;
		return;
	}
	errors[failure.kind] = (errors[failure.kind] ?? 0) + 1;
	health.failures++;
	health.failingSince ??= now;
	bucket[2]++;
	health.lastError = { at: now, ...failure };
}

/** The node as the client sees it now: "down" when every attempt has failed for DOWN_AFTER_MS,
 * "degraded" when some attempt failed within the last HEALTH_WINDOW_S, else "ok". */
export function nodeStatus(
	health: RpcHealth,
	now = Date.now(),
): {
	status: "ok" | "degraded" | "down";
	window_seconds: number;
	attempts: number;
	failures: number;
} {
	const since = Math.floor(now / 1000) - HEALTH_WINDOW_S;
	let attempts = 0;
	let failures = 0;
	for (const [second, a, f] of health.recent) {
		if (second <= since) continue;
		attempts += a;
		failures += f;
	}
	const down = health.failingSince != null && now - health.failingSince >= DOWN_AFTER_MS;
	const status = down ? "down" : failures > 0 ? "degraded" : "ok";
	return { status, window_seconds: HEALTH_WINDOW_S, attempts, failures };
}
