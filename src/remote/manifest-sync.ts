import { randomBytes } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { checkManifestText } from "../store/format/manifest-check.js";
import type { Logger } from "../util/logger.js";
import type { Bucket } from "./bucket.js";

/*
 * A reader over a bucket keeps each chain's manifest (and its writer's status) in its cache
 * folder, fetched again every poll when its ETag changed: the store then reads that folder as
 * it reads a local one, and fetches the data files a query needs through the file cache. The
 * publisher uploads a manifest only after every file it lists, so the files of any manifest
 * seen here can be fetched.
 */

export interface SyncStats {
	chains: string[];
	/** Unix ms of the last round that reached the bucket, or null before the first. */
	syncedAt: number | null;
	failures: number;
	problem: string | null;
}

const SYNCED = ["_manifest.json", "_status.json"] as const;

/** What is wrong with a fetched `_manifest.json` or `_status.json`, or null. */
function fetchedProblem(name: (typeof SYNCED)[number], chain: string, body: Uint8Array): string | null {
	const text = Buffer.from(body).toString("utf8");
	if (name === "_manifest.json") return checkManifestText(text, chain).problem;
	try {
		JSON.parse(text);
		return null;
	} catch (err) {
		return `not whole JSON (${(err as Error).message})`;
	}
}

export async function startManifestSync(
	bucket: Bucket,
	dir: string,
	opts: { pollMs: number; logger: Pick<Logger, "warn"> },
) {
	const stats: SyncStats = { chains: [], syncedAt: null, failures: 0, problem: null };
	const etags = new Map<string, string>();
	const put = async (path: string, body: Uint8Array) => {
		await mkdir(dirname(path), { recursive: true });
		const tmp = `${path}.tmp-${randomBytes(6).toString("hex")}`;
		await writeFile(tmp, body);
		await rename(tmp, path);
	};
	const round = async () => {
		try {
			const chains = await bucket.chains();
			const bad: string[] = [];
			for (const chain of chains)
				for (const name of SYNCED) {
					const path = `${chain}/${name}`;
					const got = await bucket.get(path, etags.get(path));
					if (got === null || got === "unchanged") continue;
					// Only a whole one replaces what the store reads: a transfer cut short, or a
					// server that is not atomic (s3rver), can hand over part of an object. Its ETag
					// is not kept, so the next round fetches it again; the other chains go on.
					const problem = fetchedProblem(name, chain, got.body);
					if (problem) {
						bad.push(`${path} as fetched: ${problem}`);
						continue;
					}
					await put(join(dir, chain, name), got.body);
					etags.set(path, got.etag);
				}
			stats.chains = chains;
			if (bad.length > 0) throw new Error(`${bad.join("; ")} (fetched again at the next poll)`);
			stats.syncedAt = Date.now();
			stats.problem = null;
		} catch (err) {
			const message = (err as Error).message;
			if (message !== stats.problem)
				opts.logger.warn(`reading the lake's manifests from ${bucket.url} failed (retried): ${message}`);
			stats.failures++;
			stats.problem = message;
		}
	};
	// The first round before the service starts, so it knows its chains from its first request.
	await round();
	let stopped = false;
	let timer: NodeJS.Timeout | undefined;
	let current: Promise<void> = Promise.resolve();
	const loop = () => {
		timer = setTimeout(() => {
			current = round().finally(() => {
				if (!stopped) loop();
			});
		}, opts.pollMs);
		timer.unref();
	};
	loop();
	return {
		stats,
		/** One round now (tests, and a reader that wants the newest state at once). */
		syncNow: () => round(),
		async stop() {
			stopped = true;
			clearTimeout(timer);
			await current;
		},
	};
}
