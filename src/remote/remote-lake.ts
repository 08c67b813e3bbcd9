import type { Logger } from "../util/logger.js";
import { openBucket } from "./bucket.js";
import { type CacheStats, type FileCache, openFileCache } from "./file-cache.js";
import { type SyncStats, startManifestSync } from "./manifest-sync.js";

/** What a reader over a bucket shows in /readyz: where its lake is, how fresh, its cache. */
export interface RemoteStatus {
	url: string;
	synced_at: string | null;
	sync_failures: number;
	problem: string | null;
	cache: CacheStats;
}

export interface RemoteLake {
	/** For createStore's `files`: each query's files fetched into the cache folder. */
	files: FileCache;
	status(): RemoteStatus;
	/** One manifest round now (tests). */
	syncNow(): Promise<void>;
	stop(): Promise<void>;
}

/**
 * A reader's view of a lake published to `url` (s3://bucket/prefix, remote/publisher.ts):
 * `cacheDir` holds the chains' manifests, refreshed every `pollMs`, and the data files queries
 * have read, up to `cacheBytes`. The store reads `cacheDir` as a data folder.
 */
export async function openRemoteLake(opts: {
	url: string;
	cacheDir: string;
	cacheBytes: number;
	pollMs: number;
	endpoint?: string;
	logger: Pick<Logger, "warn">;
}): Promise<RemoteLake> {
	const bucket = openBucket(opts.url, { endpoint: opts.endpoint });
	const files = await openFileCache(opts.cacheDir, bucket, opts.cacheBytes);
	const sync = await startManifestSync(bucket, opts.cacheDir, { pollMs: opts.pollMs, logger: opts.logger });
	const s: SyncStats = sync.stats;
	return {
		files,
		status: () => ({
			url: opts.url,
			synced_at: s.syncedAt === null ? null : new Date(s.syncedAt).toISOString(),
			sync_failures: s.failures,
			problem: s.problem,
			cache: files.stats(),
		}),
		syncNow: sync.syncNow,
		async stop() {
			await sync.stop();
			bucket.close();
		},
	};
}
