import { rm } from "node:fs/promises";
import { lakeExporter } from "./delta/lake-export.js";

/** How long a file that left the manifest stays on disk for API requests that began before. */
export const RETIRE_GRACE_MS = 30_000;

/**
 * Deletion of unlisted files after a grace period, for writers that run in passes (backfill,
 * reindex): `retire` notes files, `sweep` deletes those due, called between passes. What is
 * still waiting when the writer ends is removed by the next writer's start-up cleanup
 * (removeUnlisted). The follower keeps its own timers (it runs for good).
 */
export function createRetireLater(chainDir: string, graceMs = RETIRE_GRACE_MS) {
	// Files the Delta logs removed within their retention are the vacuum's to delete (delta/lake-export.ts).
	const lake = lakeExporter(chainDir);
	const waiting: { at: number; files: string[] }[] = [];
	return {
		retire(files: string[]) {
			waiting.push({ at: Date.now(), files });
		},
		async sweep(now = Date.now()) {
			while (waiting[0] && now - waiting[0].at >= graceMs) {
				for (const f of waiting.shift()?.files ?? []) if (!lake.retains(f)) await rm(f, { force: true });
			}
		},
	};
}
