import type { FastifyReply } from "fastify";
import { ApiError } from "./errors.js";

/** Per-key request rate: a token bucket of `burst` tokens refilled at `perSecond` tokens a second. */
export interface RateLimitOptions {
	/** Sustained requests per second per key; 0 turns rate limiting off. Fractions are allowed. */
	perSecond: number;
	/** Requests a key may send at once after a pause: the bucket's size. */
	burst: number;
}

/** The production default (scripts/serve.ts): 50 requests/s sustained, bursts of 100. */
export const DEFAULT_RATE_LIMIT: RateLimitOptions = { perSecond: 50, burst: 100 };

export interface RateDecision {
	allowed: boolean;
	/** The bucket's size (X-RateLimit-Limit). */
	limit: number;
	/** Whole requests left right now (X-RateLimit-Remaining). */
	remaining: number;
	/** Whole seconds until the bucket is full again, 0 when it is (X-RateLimit-Reset). */
	resetSeconds: number;
	/** When refused: whole seconds, at least 1, until the next token (Retry-After). */
	retryAfterSeconds: number;
}

interface Bucket {
	tokens: number;
	at: number;
}

/**
 * Token buckets by caller identity (the key's hash from auth, never the key). Buckets refill
 * lazily when touched, so there is no timer. A bucket that has refilled to full is the same as
 * no bucket, so idle buckets are dropped by a sweep at most every `sweepMs`; `maxBuckets`
 * bounds memory even if every bucket is busy (the oldest-touched go first, which at worst hands
 * a key a fresh burst: only authenticated keys get buckets, so this needs that many real keys).
 * A refused request takes no token, so a client that waits for Retry-After is served then.
 */
export function createRateLimiter(
	opts: RateLimitOptions & { maxBuckets?: number; sweepMs?: number; now?: () => number },
) {
	const { perSecond, burst } = opts;
	if (!(perSecond > 0) || !Number.isFinite(perSecond)) throw new Error("rate limit: perSecond must be above 0");
	if (!(burst >= 1) || !Number.isFinite(burst)) throw new Error("rate limit: burst must be at least 1");
	const maxBuckets = opts.maxBuckets ?? 10_000;
	const sweepMs = opts.sweepMs ?? 10_000;
	const now = opts.now ?? (() => performance.now());
	const buckets = new Map<string, Bucket>();
	let lastSweep = now();

	const level = (b: Bucket, t: number) => Math.min(burst, b.tokens + ((t - b.at) / 1000) * perSecond);

	function sweep(t: number) {
		lastSweep = t;
		for (const [id, b] of buckets) if (level(b, t) >= burst) buckets.delete(id);
		// Still too many busy buckets: drop the least recently touched down to 90 %, so a
		// sustained overflow does not sweep on every request.
		if (buckets.size >= maxBuckets) {
			let excess = buckets.size - Math.floor(maxBuckets * 0.9);
			for (const id of buckets.keys()) {
				if (excess-- <= 0) break;
				buckets.delete(id);
			}
		}
	}

	return {
		take(id: string): RateDecision {
			const t = now();
			if (t - lastSweep >= sweepMs || (buckets.size >= maxBuckets && !buckets.has(id))) sweep(t);
			const b = buckets.get(id) ?? { tokens: burst, at: t };
			b.tokens = level(b, t);
			b.at = t;
			const allowed = b.tokens >= 1;
			if (allowed) b.tokens -= 1;
			// Re-inserted so the Map's order is least recently touched first.
			buckets.delete(id);
			buckets.set(id, b);
			return {
				allowed,
				limit: burst,
				remaining: Math.max(0, Math.floor(b.tokens)),
				resetSeconds: Math.ceil((burst - b.tokens) / perSecond),
				retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / perSecond)),
			};
		},
		/**
		 * Takes `tokens` more from `id`'s bucket after the fact (a SQL statement weighs its time):
		 * the bucket may go below zero, as far as the charge takes it (issue 27: capping the debt
		 * at the burst let a key resend a 37 s statement every 2 s of refill), and its next
		 * requests wait for the refill.
		 */
		charge(id: string, tokens: number) {
			if (!(tokens > 0)) return;
			const t = now();
			const b = buckets.get(id) ?? { tokens: burst, at: t };
			b.tokens = level(b, t) - tokens;
			b.at = t;
			buckets.delete(id);
			buckets.set(id, b);
		},
		/** Buckets held now (for tests and metrics). */
		size: () => buckets.size,
		perSecond,
		burst,
	};
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

/**
 * Takes a token for `identity` and puts the bucket's state in the X-RateLimit-* headers (kept on
 * whatever the request ends as, errors included); over the limit, a 429 with Retry-After.
 */
export function enforceRateLimit(limiter: RateLimiter, identity: string, reply: FastifyReply): void {
	const d = limiter.take(identity);
	reply
		.header("X-RateLimit-Limit", String(d.limit))
		.header("X-RateLimit-Remaining", String(d.remaining))
		.header("X-RateLimit-Reset", String(d.resetSeconds));
	if (d.allowed) return;
	reply.header("Retry-After", String(d.retryAfterSeconds));
	throw new ApiError(
		429,
		"RATE_LIMITED",
		`too many requests for this API key (at most ${limiter.perSecond}/s, in bursts of up to ${limiter.burst}): wait ${d.retryAfterSeconds} s (Retry-After) before sending again, and spread requests out; the X-RateLimit-Remaining header says how many may be sent at once`,
	);
}

/**
 * The rate limit from flag or environment text: `rate` requests/s (default 50, 0 = off) and
 * `burst` (default twice the rate, at least 1). Throws a message naming the bad value.
 */
export function parseRateLimit(rate: string | undefined, burst: string | undefined): RateLimitOptions {
	const perSecond = rate === undefined || rate === "" ? DEFAULT_RATE_LIMIT.perSecond : Number(rate);
	if (!Number.isFinite(perSecond) || perSecond < 0)
		throw new Error(`--rate-limit must be requests per second per key (0 = no limit), got ${rate}`);
	const size = burst === undefined || burst === "" ? Math.max(1, Math.ceil(perSecond * 2)) : Number(burst);
	if (!Number.isInteger(size) || size < 1)
		throw new Error(`--rate-burst must be a whole number of requests, at least 1, got ${burst}`);
	return { perSecond, burst: size };
}
