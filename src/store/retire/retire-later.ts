import { rm } from "node:fs/promises";
import { lakeExporter } from "../delta/lake-export.js";
import { dropRetired, noteRetired } from "./retired-journal.js";

/* Retiring (retire/): files that left the manifest are deleted after a grace, unless the Delta logs keep them. */

/**
 * How long a file that left the manifest stays on disk for API requests that began before, in
 * this process or another (a request may wait for a DuckDB connection before it opens its files:
 * query/store/store-options.ts SNAPSHOT_MAX_AGE_MS bounds that wait well below this).
 */
export const RETIRE_GRACE_MS = 5 * 60_000;

/**
 * Deletion of unlisted files after a grace period, for writers that run in passes (backfill,
 * reindex): `retire` notes files, `sweep` deletes those due, called between passes. What is
 * still waiting when the writer ends is removed by the next writer once due (removeUnlisted, or
 * a follower's timers). The follower keeps its own timers (it runs for good).
 */
export function createRetireLater(chainDir: string, graceMs = RETIRE_GRACE_MS) {
	// Files the Delta logs removed within their retention are the vacuum's to delete (delta/lake-export.ts).
	const lake = lakeExporter(chainDir);
	const waiting: { at: number; files: string[] }[] = [];
	return {
		retire(files: string[]) {
			const at = Date.now();
			waiting.push({ at, files });
			// On disk too: the next writer's start keeps them until due (retired-journal.ts).
			noteRetired(chainDir, files, at + graceMs);
		},
		async sweep(now = Date.now()) {
			while (waiting[0] && now - waiting[0].at >= graceMs) {
				const files = waiting.shift()?.files ?? [];
				for (const f of files) if (!lake.retains(f)) await rm(f, { force: true });
				dropRetired(chainDir, files);
			}
		},
	};
}
