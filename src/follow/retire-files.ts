import { rm } from "node:fs/promises";
import { lakeExporter } from "../store/delta/lake-export.js";
import { chainDir } from "../store/format/layout.js";
import type { Manifest } from "../store/format/records.js";
import { listedPaths } from "../store/indexes/listing.js";
import { dropRetired, noteRetired } from "../store/retire/retired-journal.js";
import { crashPoint } from "../util/crash-point.js";
import type { Logger } from "../util/logger.js";
import { DEFAULT_DELETE_GRACE_MS } from "./follower-options.js";

/*
 * Files a follower's commits replaced (reorged out, compacted, merged) stay on disk for the
 * readers that began before the switch, and are deleted when their grace ends, in this process or,
 * after a restart, the next (the journal: store/retired-journal.ts).
 */

export function createRetirer(opts: {
	dataDir: string;
	chainId: string;
	logger: Logger;
	deleteGraceMs?: number;
	/** The manifest as it is now (null once stopped): a file it lists is never deleted. */
	manifest: () => Manifest | null;
}) {
	const { dataDir, chainId, logger } = opts;
	/** Retired files waiting for their grace period, with the time it ends. */
	const timers = new Map<NodeJS.Timeout, { due: number; run: () => void }>();
	/** Deletions under way, awaited by stop() so a clean stop does not leave half of them. */
	const deleting = new Set<Promise<void>>();
	const lake = lakeExporter(chainDir(dataDir, chainId));

	/** Deletes `files` (just unlisted) after the grace, or at `due` (noted before a restart). */
	function retire(files: string[], due?: number) {
		const grace = due === undefined ? (opts.deleteGraceMs ?? DEFAULT_DELETE_GRACE_MS) : Math.max(0, due - Date.now());
		// Noted on disk, so a restart before they are due keeps them too (store/retired-journal.ts).
		if (due === undefined) noteRetired(chainDir(dataDir, chainId), files, Date.now() + grace);
		const run = () => {
			timers.delete(t);
			// Unlisted since the manifest switch: a crash midway leaves files the next start removes.
			// Names are never reused (layout.ts); the check against what is listed now is the
			// second line of defence: a listed file is never deleted, whatever happened meanwhile.
			const m = opts.manifest();
			const live = m ? listedPaths(dataDir, m) : new Set<string>();
			const done = (async () => {
				for (const f of files) {
					if (live.has(f)) {
						logger.error(`not deleting ${f}: retired earlier, but the manifest lists it again`);
						continue;
					}
					// Removed from the Delta logs within their retention: the vacuum deletes it later.
					if (lake.retains(f)) continue;
					await rm(f, { force: true });
					crashPoint("follow.retire.file-removed");
				}
				dropRetired(chainDir(dataDir, chainId), files);
			})().catch((err: unknown) => logger.warn(`could not delete replaced files: ${(err as Error).message}`));
			deleting.add(done);
			void done.finally(() => deleting.delete(done));
		};
		const t = setTimeout(run, grace);
		t.unref();
		timers.set(t, { due: Date.now() + grace, run });
	}

	return {
		retire,
		/**
		 * At a clean stop: deletions already due run now and are awaited; the others are left to
		 * the next start (noted in `_retired.json`), as readers may still be on those files.
		 */
		async stop() {
			for (const [t, { due, run }] of timers) {
				clearTimeout(t);
				if (due <= Date.now()) run();
			}
			await Promise.all(deleting);
		},
	};
}
