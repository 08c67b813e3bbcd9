import { renameSync, rmSync, writeFileSync } from "node:fs";
import { rename, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { fsyncDir, fsyncFile, fsyncSyncPath } from "./fsync.js";

/*
 * A write that fails removes the temporary files it made. Writers write to a temporary name and
 * rename it into place; when the write fails (most often a full disk: ENOSPC) those files were
 * left until the next start's cleanup, and on a full disk they are what fills it: the follower
 * backs off and retries while they hold the space, a stopped backfill leaves them (issue 27).
 */

/** Runs `write`; if it throws, removes `temps` (each if present; a failure to remove is ignored) and rethrows. */
export async function removingOnFailure<T>(temps: readonly string[], write: () => Promise<T>): Promise<T> {
	try {
		return await write();
	} catch (err) {
		await Promise.all(temps.map((t) => rm(t, { force: true }).catch(() => {})));
		throw err;
	}
}

/** removingOnFailure for a synchronous write. */
export function removingOnFailureSync<T>(temps: readonly string[], write: () => T): T {
	try {
		return write();
	} catch (err) {
		for (const t of temps)
			try {
				rmSync(t, { force: true });
			} catch {}
		throw err;
	}
}

/**
 * Replaces `path` with `data` through `<path>.tmp` and a rename, synchronously and without a sync:
 * for small files a crash may lose the last write of but never half-write (the follower's status,
 * the retired files' journal). The temporary file is removed if it fails (a full disk).
 */
export function replaceFileSync(path: string, data: string): void {
	removingOnFailureSync([`${path}.tmp`], () => {
		writeFileSync(`${path}.tmp`, data);
		renameSync(`${path}.tmp`, path);
	});
}

/**
 * writeFileDurably for a synchronous writer, the new file created with `mode` (the API key file:
 * 0600). A lost revocation would let a revoked key in again after a power loss.
 */
export function writeFileDurablySync(path: string, data: string, mode = 0o644): void {
	removingOnFailureSync([`${path}.tmp`], () => {
		writeFileSync(`${path}.tmp`, data, { mode });
		fsyncSyncPath(`${path}.tmp`);
		renameSync(`${path}.tmp`, path);
		fsyncSyncPath(dirname(path), true);
	});
}

/**
 * Writes `data` at `path` atomically and durably: at `<path>.tmp`, synced, then renamed into place
 * and the folder synced; the temporary file is removed if it fails. `beforeRename` runs once the
 * temporary file is durable (a crash point).
 */
export async function writeFileDurably(path: string, data: Uint8Array, beforeRename = () => {}): Promise<void> {
	await removingOnFailure([`${path}.tmp`], async () => {
		await writeFile(`${path}.tmp`, data);
		await fsyncFile(`${path}.tmp`);
		beforeRename();
		await rename(`${path}.tmp`, path);
		await fsyncDir(dirname(path));
	});
}
