import { closeSync, fsyncSync, mkdirSync, openSync } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * Durability: a rename is atomic, but without fsync a power loss (or a kernel crash) can leave
 * a renamed file with none of its bytes on disk, or lose the rename itself. So every file the
 * manifest will list is synced before its rename into place and its folder after, and the
 * manifest likewise: once a manifest naming a file is on disk, so is the file.
 *
 * `CHAINLAKE_FSYNC=0` turns syncing off, for throwaway folders only (it is what the "without
 * sync" figures of RELIABILITY.md were measured with); read once, at load.
 */
const enabled = process.env.CHAINLAKE_FSYNC !== "0";

/** Flushes a file's bytes to the disk. */
export async function fsyncFile(path: string): Promise<void> {
	if (!enabled) return;
	const fh = await open(path, "r");
	try {
		await fh.sync();
	} finally {
		await fh.close();
	}
}

/** Windows cannot open a folder; its file systems order metadata themselves. */
const folderUnopenable = () => process.platform === "win32";
/** Some file systems (and Windows) refuse fsync on a folder handle. */
const folderSyncRefused = (err: unknown) => {
	const code = (err as NodeJS.ErrnoException).code;
	return code === "EINVAL" || code === "EPERM" || code === "EISDIR";
};

/** Flushes a folder's entries (a rename, a new file or folder in it) to the disk. */
export async function fsyncDir(path: string): Promise<void> {
	if (!enabled) return;
	let fh: Awaited<ReturnType<typeof open>>;
	try {
		fh = await open(path, "r");
	} catch (err) {
		if (folderUnopenable()) return;
		throw err;
	}
	try {
		await fh.sync();
	} catch (err) {
		if (!folderSyncRefused(err)) throw err;
	} finally {
		await fh.close();
	}
}

/** fsyncFile, or with `folder` fsyncDir, for a synchronous writer (the API key file: scripts/keys.ts). */
export function fsyncSyncPath(path: string, folder = false): void {
	if (!enabled) return;
	let fd: number;
	try {
		fd = openSync(path, "r");
	} catch (err) {
		if (folder && folderUnopenable()) return;
		throw err;
	}
	try {
		fsyncSync(fd);
	} catch (err) {
		if (!(folder && folderSyncRefused(err))) throw err;
	} finally {
		closeSync(fd);
	}
}

/**
 * The folders that gained an entry when `mkdir(dir, { recursive: true })` created `first` (the
 * topmost new folder): the parent of each new folder, from `dir`'s parent up to `first`'s.
 */
function foldersGainingEntries(dir: string, first: string): string[] {
	const top = dirname(first);
	const out: string[] = [];
	for (let d = dirname(dir); ; d = dirname(d)) {
		out.push(d);
		if (d === top || dirname(d) === d) return out;
	}
}

/**
 * Creates `dir` (and missing parents) and makes the new entries durable: each folder that
 * gained an entry is synced. Nothing is synced when `dir` already existed.
 */
export async function mkdirDurably(dir: string): Promise<void> {
	const first = await mkdir(dir, { recursive: true });
	if (first === undefined || !enabled) return;
	for (const d of foldersGainingEntries(dir, first)) await fsyncDir(d);
}

/** mkdirDurably, for a synchronous writer (the API key file's folder: api/keys.ts). */
export function mkdirDurablySync(dir: string): void {
	const first = mkdirSync(dir, { recursive: true });
	if (first === undefined || !enabled) return;
	for (const d of foldersGainingEntries(dir, first)) fsyncSyncPath(d, true);
}
