import { existsSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { lakeExportStatus } from "../store/delta/save-manifest.js";
import { chainDir, statusPath } from "../store/format/layout.js";
import { replaceFileSync } from "../util/temp-files.js";
import type { FollowSource } from "./follower-stats.js";

/*
 * One writer, many readers: the follower that holds a chain's write lock says how it is doing
 * in `<chain>/_status.json` (store/layout.ts statusPath), rewritten after every step, so API processes that do not follow
 * (`npm run serve` beside `npm run follow`, or `serve --follow` standing by) show the writer's
 * node head, lag, faults and RPC errors in their /readyz and /metrics. Not data: never fsynced
 * (a crash loses at most one step's figures, and the next step writes them again).
 */

export interface WriterStatus {
	pid: number;
	host: string;
	/** Unix ms of this write: a reader calls the status stale when it is much older than `poll_ms`. */
	written_at: number;
	poll_ms: number;
	/** Written by a clean stop: no writer follows the chain until one starts again. */
	stopped: boolean;
	source: FollowSource;
}

/** Writes the status (a temporary file renamed over the old one: a reader sees one whole status). */
export function writeStatus(dataDir: string, chain: string, source: FollowSource, pollMs: number, stopped = false) {
	const path = statusPath(dataDir, chain);
	if (!existsSync(chainDir(dataDir, chain))) return;
	const status: WriterStatus = {
		pid: process.pid,
		host: hostname(),
		written_at: Date.now(),
		poll_ms: pollMs,
		stopped,
		source: { ...source, deltaExport: lakeExportStatus(dataDir, chain) ?? undefined },
	};
	replaceFileSync(path, JSON.stringify(status));
}

/** The writer's last status, or null when there is none (no writer ran yet) or it cannot be read. */
export function readStatus(dataDir: string, chain: string): WriterStatus | null {
	try {
		const s = JSON.parse(readFileSync(statusPath(dataDir, chain), "utf8")) as WriterStatus;
		return typeof s.written_at === "number" && s.source?.stats ? s : null;
	} catch {
		return null;
	}
}

/** How old a status may be before readers call it stale: three polls, and at least 30 s. */
export const staleAfterMs = (s: WriterStatus) => Math.max(30_000, 3 * s.poll_ms);
