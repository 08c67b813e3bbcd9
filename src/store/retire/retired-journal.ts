import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { replaceFileSync } from "../../util/temp-files.js";

/*
 * `<chain>/_retired.json`: the files a writer took out of the manifest and keeps on disk for
 * API requests (in this process or others) that took their snapshot before, each with the time
 * it may be deleted. Written right after the manifest save that retired them, so a writer that
 * restarts (or the next writer) deletes them when they are due, not at once as leftovers of an
 * interrupted run. A crash between that save and this write loses the note: the files are then
 * deleted at the next start, the one case left where a request in another process that began in
 * the second before the crash can meet a deleted file (and is answered 503). Not data, not
 * fsynced; only the lock holder writes it.
 */

export interface RetiredEntry {
	/** Unix ms from when the files may be deleted. */
	due: number;
	/** Paths relative to the chain folder. */
	files: string[];
}

const journalPath = (chainDir: string) => join(chainDir, "_retired.json");

export function readRetired(chainDir: string): RetiredEntry[] {
	try {
		const entries = JSON.parse(readFileSync(journalPath(chainDir), "utf8")) as RetiredEntry[];
		return Array.isArray(entries) ? entries.filter((e) => typeof e.due === "number" && Array.isArray(e.files)) : [];
	} catch {
		return [];
	}
}

function write(chainDir: string, entries: RetiredEntry[]) {
	const path = journalPath(chainDir);
	if (entries.length === 0) {
		if (existsSync(path)) writeFileSync(path, "[]\n");
		return;
	}
	// (On a full disk its temporary file is removed: it would hold the last pages until the next start.)
	replaceFileSync(path, `${JSON.stringify(entries)}\n`);
}

/** Notes that `files` (absolute) left the manifest and may be deleted from `due`. */
export function noteRetired(chainDir: string, files: readonly string[], due: number) {
	if (files.length === 0) return;
	write(chainDir, [...readRetired(chainDir), { due, files: files.map((f) => relative(chainDir, f)) }]);
}

/** Forgets `files` (absolute): deleted, or kept on for another reason (the Delta logs). */
export function dropRetired(chainDir: string, files: readonly string[]) {
	const gone = new Set(files.map((f) => relative(chainDir, f)));
	const entries = readRetired(chainDir);
	const left = entries
		.map((e) => ({ due: e.due, files: e.files.filter((f) => !gone.has(f)) }))
		.filter((e) => e.files.length > 0);
	if (left.length !== entries.length || left.some((e, i) => e.files.length !== entries[i]?.files.length))
		write(chainDir, left);
}

/** The retired files not yet due (absolute), with their due times: not to be deleted yet. */
export function pendingRetired(chainDir: string, now = Date.now()): Map<string, number> {
	const out = new Map<string, number>();
	for (const e of readRetired(chainDir)) if (e.due > now) for (const f of e.files) out.set(join(chainDir, f), e.due);
	return out;
}
