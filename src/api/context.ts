import type { FastifyBaseLogger, FastifyRequest } from "fastify";
import type { FollowSource } from "../follow/follower-stats.js";
import type { Snapshot, Store } from "../query/store/store.js";
import type { RemoteStatus } from "../remote/remote-lake.js";
import { notFound } from "./errors.js";
import type { Keyring } from "./keys.js";
import type { Metrics } from "./metrics.js";
import type { RateLimiter } from "./rate-limit.js";

/** What every route needs, handed to the route plugins once. */
export interface ApiContext {
	store: Store;
	keyring: Keyring;
	metrics: Metrics;
	followers: Map<string, FollowSource>;
	/** Set when the lake is read from a bucket through a local cache (remote/remote-lake.ts). */
	remote?: { status(): RemoteStatus };
	log?: FastifyBaseLogger;
	/** The served data folder. */
	dataDir: string;
	/** Per-key rate limits, when on: the SQL endpoint charges a statement's DuckDB time. */
	limiter?: RateLimiter | null;
	/** /metrics answers without a key (serve --metrics-public); otherwise it needs one. */
	metricsPublic?: boolean;
}

/** 404 for a well-formed chain id that has no data here, naming the chains that do. */
export function servedChain(ctx: ApiContext, chain: string): string {
	if (!ctx.store.serves(chain)) {
		const chains = ctx.store.chains();
		throw notFound(
			"CHAIN_NOT_FOUND",
			`chain ${chain} is not served here; served: ${chains.length > 0 ? chains.join(", ") : "none yet"}`,
		);
	}
	return chain;
}

/** The snapshots each request opened, for its Server-Timing (queryMsOf). */
const opened = new WeakMap<FastifyRequest, Snapshot[]>();

/**
 * The served chain (`req.params.chain_id`)'s data for one request: a snapshot, so all its queries
 * see one file set. Opened once a request (the HTTP cache's check opens it before the route does:
 * one look at the manifest a request, and its ETag names the generation the answer reads).
 */
export function openChain(ctx: ApiContext, req: FastifyRequest): Snapshot {
	const chain = servedChain(ctx, (req.params as { chain_id: string }).chain_id);
	const dbs = opened.get(req) ?? [];
	const open = dbs.find((db) => db.chain === chain);
	if (open) return open;
	const db = ctx.store.snapshot(chain);
	opened.set(req, [...dbs, db]);
	return db;
}

/**
 * The DuckDB time of a request's statements, in ms, if it opened a chain's data: sent as
 * `Server-Timing: duckdb;dur=<ms>` (app.ts), so a client (a notebook, a benchmark) can tell the
 * database's share of an answer's time from the HTTP path's, request by request.
 */
export function queryMsOf(req: FastifyRequest): number | undefined {
	const dbs = opened.get(req);
	return dbs?.reduce((ms, db) => ms + db.queryMs(), 0);
}
