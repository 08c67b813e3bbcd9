import { randomBytes } from "node:crypto";
import { mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import type { Bucket } from "./bucket.js";

/*
 * A reader's local copy of the lake files its queries touch, read through from the bucket:
 * a query names its files, `hold` fetches those not here (each once, however many queries ask
 * at the same time) and keeps them until the query ends. Files are immutable and uniquely named
 * (store/format/layout.ts), so a cached file never goes stale; it is written under a temporary name and
 * renamed, so one that is here is whole, across restarts too. Past `maxBytes`, the files
 * used least recently and held by no query are deleted.
 */

export interface CacheStats {
	files: number;
	bytes: number;
	maxBytes: number;
	hits: number;
	misses: number;
	fetchedBytes: number;
	evicted: number;
}

export interface FileCache {
	/**
	 * Makes `paths` (inside the cache folder) present and keeps them until `release()`. A path
	 * the bucket does not have is left absent (the query then fails as on a folder that lost it).
	 */
	hold(paths: readonly string[]): Promise<() => void>;
	stats(): CacheStats;
}

/** A cache size as the flags take it: "512MB", "20GB" (powers of 1024). */
export function parseCacheSize(text: string): number | null {
	const m = /^(\d+(?:\.\d+)?)\s*(MB|GB|TB|MiB|GiB|TiB)$/i.exec(text.trim());
	if (!m) return null;
	const unit = { m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 }[(m[2] as string)[0]?.toLowerCase() as "m" | "g" | "t"];
	return Math.round(Number(m[1]) * unit);
}

const TMP = /\.tmp-[0-9a-f]{12}$/;

export async function openFileCache(dir: string, bucket: Bucket, maxBytes: number): Promise<FileCache> {
	type Entry = { size: number; usedAt: number; holds: number };
	const entries = new Map<string, Entry>();
	const fetching = new Map<string, Promise<boolean>>();
	const s = { hits: 0, misses: 0, fetchedBytes: 0, evicted: 0 };
	let bytes = 0;

	// What an earlier run left: whole files are kept (least recently written first out), halves removed.
	const walk = async (d: string): Promise<void> => {
		for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
			const p = join(d, e.name);
			if (e.isDirectory()) await walk(p);
			else if (TMP.test(e.name)) await rm(p, { force: true });
			else if (e.name.endsWith(".parquet") || e.name.endsWith(".filter")) {
				const st = await stat(p);
				entries.set(p, { size: st.size, usedAt: st.mtimeMs, holds: 0 });
				bytes += st.size;
			}
		}
	};
	await mkdir(dir, { recursive: true });
	await walk(dir);

	/** Fetches `path` from the bucket; false if the bucket has no such object. */
	const fetchOne = async (path: string): Promise<boolean> => {
		await mkdir(dirname(path), { recursive: true });
		// Streamed to a temporary name, renamed once whole: a reader never opens half a file.
		const tmp = `${path}.tmp-${randomBytes(6).toString("hex")}`;
		const size = await bucket.download(relative(dir, path).split("\\").join("/"), tmp).catch(async (err) => {
			await rm(tmp, { force: true });
			throw err;
		});
		if (size === null) {
			await rm(tmp, { force: true });
			return false;
		}
		await rename(tmp, path);
		entries.set(path, { size, usedAt: Date.now(), holds: 0 });
		bytes += size;
		s.fetchedBytes += size;
		return true;
	};

	/** Deletes the least recently used files no query holds until the cache fits. */
	const evict = async () => {
		if (bytes <= maxBytes) return;
		const idle = [...entries].filter(([, e]) => e.holds === 0).sort((a, b) => a[1].usedAt - b[1].usedAt);
		for (const [path, e] of idle) {
			if (bytes <= maxBytes) break;
			// Held by a query since the list was made, or gone already.
			if (e.holds > 0 || entries.get(path) !== e) continue;
			entries.delete(path);
			bytes -= e.size;
			s.evicted++;
			await rm(path, { force: true });
		}
	};

	return {
		async hold(paths) {
			const held: Entry[] = [];
			const release = () => {
				for (const e of held.splice(0)) e.holds--;
			};
			/** Present and held; fetched first if need be (again if evicted before it was held). */
			const take = async (p: string) => {
				// Twice at most: a file fetched can be evicted by another query before this one holds it.
				for (let attempt = 0; attempt < 2; attempt++) {
					const e = entries.get(p);
					if (e) {
						if (attempt === 0) s.hits++;
						e.holds++;
						e.usedAt = Date.now();
						held.push(e);
						return;
					}
					let f = fetching.get(p);
					if (!f) {
						s.misses++;
						f = fetchOne(p).finally(() => fetching.delete(p));
						fetching.set(p, f);
					}
					if (!(await f)) return;
				}
			};
			const results = await Promise.allSettled([...new Set(paths)].map(take));
			const failed = results.find((r) => r.status === "rejected");
			if (failed) {
				release();
				throw (failed as PromiseRejectedResult).reason;
			}
			await evict();
			let released = false;
			return () => {
				if (released) return;
				released = true;
				release();
			};
		},
		stats: () => ({ files: entries.size, bytes, maxBytes, ...s }),
	};
}
