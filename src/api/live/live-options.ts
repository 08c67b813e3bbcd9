import { randomBytes } from "node:crypto";
import type { Store } from "../../query/store/store.js";
import { type HeadWatcher, headWatcher } from "./head-watcher.js";

/*
 * The live room's settings and shared state: one per app (decorated as `app.live`), so the feed
 * (feed.ts) finds the store and its chain's head watcher from the FastifyInstance alone.
 */

export interface LiveOptions {
	/** How often each chain's head watcher looks at the manifest (one stat), in ms. */
	pollMs: number;
	/** A `head` event at least this often on a quiet stream, in ms (15 s; shorter in tests). */
	heartbeatMs: number;
	/** Open streams in this process; one more is a 429 STREAM_LIMIT. */
	maxStreams: number;
	/** Open streams of one API key; one more is a 429 STREAM_LIMIT. */
	maxStreamsPerKey: number;
	/** Bytes a reader may leave unread in its socket's buffer (for slowReaderMs; then it is dropped). */
	bufferBytes: number;
	/** How long a reader may keep more than bufferBytes unread. */
	slowReaderMs: number;
	/** Items a feed asks the list route for at a time. */
	pageItems: number;
}

export const DEFAULT_LIVE: LiveOptions = {
	pollMs: 250,
	heartbeatMs: 15_000,
	maxStreams: 1000,
	maxStreamsPerKey: 20,
	bufferBytes: 1024 * 1024,
	slowReaderMs: 30_000,
	pageItems: 500,
};

/** The header that marks a feed's own page requests (with this process's secret): no rate limit, no log line. */
export const FEED_HEADER = "x-chainlake-feed";

export interface Live {
	store: Store;
	options: LiveOptions;
	/** This process's secret for FEED_HEADER: a client cannot pass its requests off as a feed's. */
	token: string;
	/** Streams open now, in all and by key (kept by streams.ts: the caps, /metrics, tests). */
	open: { total: number; byKey: Map<string, number> };
	/** The chain's head watcher, made on first use. */
	watcher(chain: string): HeadWatcher;
	/** Stops every watcher (the app's close). */
	close(): void;
}

declare module "fastify" {
	interface FastifyInstance {
		/** Streams' and webhooks' shared state (api/live/live-options.ts). */
		live: Live;
	}
}

export function createLive(store: Store, options: Partial<LiveOptions> = {}): Live {
	const opts = { ...DEFAULT_LIVE, ...options };
	const watchers = new Map<string, HeadWatcher>();
	return {
		store,
		options: opts,
		token: randomBytes(18).toString("base64url"),
		open: { total: 0, byKey: new Map() },
		watcher(chain) {
			let w = watchers.get(chain);
			if (!w) {
				w = headWatcher(store, chain, opts.pollMs);
				watchers.set(chain, w);
			}
			return w;
		},
		close() {
			for (const w of watchers.values()) w.close();
		},
	};
}
