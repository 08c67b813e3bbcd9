import { freeSpace } from "../util/disk-full.js";
import type { Logger } from "../util/logger.js";
import { DISK_FULL_MAX_BACKOFF_MS } from "./follower-options.js";

/**
 * The disk (or quota) holding the data folder is full: said once, with the folder and its free
 * space; the next polls wait twice as long each time, up to DISK_FULL_MAX_BACKOFF_MS, and the
 * first step that succeeds again says so. Nothing to restart: a failed step commits nothing.
 */
export function createDiskFullBackoff(opts: { chainId: string; dataDir: string; logger: Logger; pollMs?: number }) {
	const { chainId, dataDir, logger } = opts;
	let diskFull: { since: number; attempts: number } | null = null;
	/** A step failed on a full disk: the wait before the next poll. */
	async function onDiskFull(err: unknown): Promise<number> {
		if (!diskFull) {
			diskFull = { since: Date.now(), attempts: 0 };
			logger.error(
				`follow ${chainId}: disk full: cannot write to ${dataDir} (${await freeSpace(dataDir)}): ${(err as Error).message}; retrying with backoff up to ${DISK_FULL_MAX_BACKOFF_MS / 1000} s until space is freed`,
			);
		}
		diskFull.attempts++;
		return Math.min(DISK_FULL_MAX_BACKOFF_MS, Math.max(opts.pollMs ?? 1000, 1000) * 2 ** (diskFull.attempts - 1));
	}
	/** A step wrote again: said once, if the disk was full. */
	async function onDiskBack(): Promise<void> {
		if (!diskFull) return;
		const secs = ((Date.now() - diskFull.since) / 1000).toFixed(0);
		logger.info(
			`follow ${chainId}: writing to ${dataDir} again (${await freeSpace(dataDir)}) after ${secs} s and ${diskFull.attempts} attempts on a full disk`,
		);
		diskFull = null;
	}
	return { onDiskFull, onDiskBack };
}
