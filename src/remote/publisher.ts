import { readFile } from "node:fs/promises";
import { relative } from "node:path";
import { lakeSettings } from "../store/delta/lake-export.js";
import { manifestPath, statusPath } from "../store/format/layout.js";
import type { Manifest } from "../store/format/records.js";
import { listedPaths } from "../store/indexes/listing.js";
import type { Logger } from "../util/logger.js";
import type { Bucket } from "./bucket.js";

/*
 * The writer's side of the lake on object storage: the chain's files as its manifest lists
 * them, copied to a bucket. Every data file is immutable and uniquely named (store/format/layout.ts),
 * so a file is uploaded once and never changes; the manifest goes last, so a reader that sees a
 * manifest finds every file it lists. Files the manifest stopped listing stay in the bucket for
 * the lake's retention (`lake.retention_minutes`, the Delta export's too) counted from when
 * this process first saw them unlisted: a publisher restart starts the count again, so it only
 * ever keeps files longer, never deletes one a reader may still fetch.
 */

/** Files and fixed names of a chain's folder that are not data: never deleted as unlisted. */
const OWN_FILES = new Set(["_manifest.json", "_status.json"]);
/** How often the writer's status goes up (readers call a status stale after 30 s). */
const STATUS_EVERY_MS = 5_000;

export interface PublishStats {
	/** The manifest generation last published, or null before the first. */
	generation: number | null;
	uploaded: number;
	deleted: number;
	failures: number;
	problem: string | null;
}

export interface Publisher {
	/** Publishes the chain's current state if it changed (and its writer status); deletes what is due. */
	publish(now?: number): Promise<void>;
	stats: PublishStats;
}

export function createPublisher(
	bucket: Bucket,
	dataDir: string,
	chain: string,
	opts: { concurrency?: number; retentionMs?: number } = {},
): Publisher {
	const stats: PublishStats = { generation: null, uploaded: 0, deleted: 0, failures: 0, problem: null };
	/** Lake-relative paths known to be in the bucket (listed once, then kept up to date). */
	let present: Set<string> | null = null;
	/** Objects of the chain found unlisted, with when this process first saw them so. */
	const unlistedSince = new Map<string, number>();
	let lastStatus = "";
	let statusAt = 0;
	const rel = (path: string) => relative(dataDir, path).split("\\").join("/");

	async function publish(now = Date.now()) {
		const text = await readFile(manifestPath(dataDir, chain), "utf8").catch(() => null);
		if (text === null) return;
		const m = JSON.parse(text) as Manifest;
		if (present === null) {
			present = new Set(await bucket.list(chain));
			// What the bucket has already: never replaced by an older state (a writer that took over
			// from another must have caught up with it first, as it has when it shares the folder).
			const there = await bucket.get(`${chain}/_manifest.json`);
			if (there && there !== "unchanged")
				stats.generation ??= (JSON.parse(Buffer.from(there.body).toString("utf8")) as Manifest).generation ?? 0;
		}
		if (stats.generation !== null && (m.generation ?? 0) < stats.generation) return;
		const listed = [...listedPaths(dataDir, m)];
		const missing = listed.filter((p) => !present?.has(rel(p)));
		// Files first, a few at a time; the manifest that lists them only once all are up.
		const concurrency = opts.concurrency ?? 8;
		for (let i = 0; i < missing.length; i += concurrency)
			await Promise.all(
				missing.slice(i, i + concurrency).map(async (p) => {
					await bucket.put(rel(p), { file: p });
					present?.add(rel(p));
					stats.uploaded++;
				}),
			);
		if (m.generation !== stats.generation || missing.length > 0) {
			await bucket.put(`${chain}/_manifest.json`, { bytes: text });
			present.add(`${chain}/_manifest.json`);
			stats.generation = m.generation ?? 0;
		}
		const status = await readFile(statusPath(dataDir, chain), "utf8").catch(() => null);
		// The writer's health for readers' /readyz: rewritten every second, sent at most every
		// STATUS_EVERY_MS (a PUT a second is a cost on a real bucket), and at once when it stops.
		if (
			status !== null &&
			status !== lastStatus &&
			(now - statusAt >= STATUS_EVERY_MS || status.includes('"stopped":true'))
		) {
			await bucket.put(`${chain}/_status.json`, { bytes: status });
			lastStatus = status;
			statusAt = now;
		}
		// Unlisted objects: deleted once they have been so for the retention.
		const live = new Set(listed.map(rel));
		const retentionMs = opts.retentionMs ?? lakeSettings(m).retention_minutes * 60_000;
		const due: string[] = [];
		for (const p of present) {
			if (live.has(p) || OWN_FILES.has(p.slice(chain.length + 1))) {
				unlistedSince.delete(p);
				continue;
			}
			const since = unlistedSince.get(p) ?? now;
			unlistedSince.set(p, since);
			if (now - since >= retentionMs) due.push(p);
		}
		if (due.length > 0) {
			await bucket.delete(due);
			for (const p of due) {
				present.delete(p);
				unlistedSince.delete(p);
			}
			stats.deleted += due.length;
		}
	}

	return {
		stats,
		async publish(now) {
			try {
				await publish(now);
				stats.problem = null;
			} catch (err) {
				stats.failures++;
				stats.problem = (err as Error).message;
				// What the bucket holds is listed again next time (an upload may have half-happened).
				present = null;
				throw err;
			}
		},
	};
}

/**
 * Publishes `chains` every `intervalMs` until stopped (a failed round is logged and retried at
 * the next). `stop()` finishes the round under way and publishes once more, so a clean stop
 * leaves the bucket at the folder's last state.
 */
export function startPublishing(
	bucket: Bucket,
	dataDir: string,
	chains: string[],
	opts: {
		intervalMs: number;
		logger: Pick<Logger, "info" | "warn">;
		retentionMs?: number;
		/** Whether this process writes `chain` now (a follower standing by publishes nothing). */
		writes?: (chain: string) => boolean;
	},
) {
	const publishers = new Map(chains.map((c) => [c, createPublisher(bucket, dataDir, c, opts)]));
	let stopped = false;
	let round: Promise<void> = Promise.resolve();
	const once = async () => {
		for (const [chain, p] of publishers) {
			if (opts.writes && !opts.writes(chain)) continue;
			const problem = p.stats.problem;
			await p.publish().catch((err: Error) => {
				if (err.message !== problem)
					opts.logger.warn(`publishing ${chain} to ${bucket.url} failed (retried): ${err.message}`);
			});
		}
	};
	let timer: NodeJS.Timeout | undefined;
	const loop = () => {
		round = once().finally(() => {
			if (!stopped) timer = setTimeout(loop, opts.intervalMs);
		});
	};
	loop();
	opts.logger.info(`publishing ${chains.join(", ")} to ${bucket.url}`);
	return {
		publishers,
		async stop() {
			stopped = true;
			clearTimeout(timer);
			await round;
			await once();
		},
	};
}
