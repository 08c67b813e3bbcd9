import type { FastifyBaseLogger } from "fastify";
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

/** The served chain's data for one request: a snapshot, so all its queries see one file set. */
export function openChain(ctx: ApiContext, chain: string): Snapshot {
	return ctx.store.snapshot(servedChain(ctx, chain));
}
