import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { acquireWriteLock } from "./lock.js";

/**
 * Takes a data folder for a fresh start (the `npm start` demo wipes its folder each time) without
 * ever deleting what a live process writes: first the folder's own write lock (held until the
 * returned release: a second demo on the same folder is refused before it touches anything), then
 * each chain folder's lock in turn, held while its contents go (a `follow`, `backfill`, `reindex`
 * or `verify` writing there refuses the wipe, naming itself). Both refusals are DATA_DIR_LOCKED
 * (lock.ts's DataDirLockedError, with the holder's pid). Nothing is removed before every chain
 * folder has been checked, and `_lock` files stay (lock.ts: a lock file is never removed).
 * `beforeClear` runs once every lock is held and before anything is removed: what else must hold
 * for the fresh start (npm start's port); if it throws, nothing is removed.
 */
export async function claimAndClearFolder(
	dir: string,
	beforeClear: () => Promise<void> = async () => {},
): Promise<() => void> {
	const release = await acquireWriteLock(dir);
	const releases: Array<() => void> = [];
	try {
		const entries = existsSync(dir) ? readdirSync(dir) : [];
		const folders = entries.filter((e) => e !== "_lock" && statSync(join(dir, e)).isDirectory());
		// Every chain folder first: one held by another process stops the wipe before anything goes.
		for (const f of folders) releases.push(await acquireWriteLock(join(dir, f)));
		await beforeClear();
		for (const e of entries) {
			if (e === "_lock") continue;
			const path = join(dir, e);
			if (!folders.includes(e)) rmSync(path, { recursive: true, force: true });
			else
				for (const inner of readdirSync(path))
					if (inner !== "_lock") rmSync(join(path, inner), { recursive: true, force: true });
		}
	} catch (err) {
		release();
		throw err;
	} finally {
		for (const r of releases) r();
	}
	return release;
}
