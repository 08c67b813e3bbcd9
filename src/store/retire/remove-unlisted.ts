import { existsSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { basename, join } from "node:path";
import { DATASETS } from "../../extract/rows.js";
import { crashPoint } from "../../util/crash-point.js";
import { LOG_DIR } from "../delta/delta-log.js";
import { lakeExporter } from "../delta/lake-export.js";
import { INDEX_NAMES } from "../format/indexes.js";
import { chainDir, manifestPath, stagingDir, statusPath } from "../format/layout.js";
import { GHOST_DATASET } from "../format/manifest.js";
import { previousManifestPath } from "../format/manifest-check.js";
import { type Manifest, METADATA_TABLE_NAMES, RANK_TABLES } from "../format/records.js";
import { listedPaths } from "../indexes/listing.js";
import { dropRetired, pendingRetired, readRetired } from "./retired-journal.js";

/* A writer's start (retire/): the files a crash left behind go, but those kept for readers. */

/** Removes every data file the manifest does not list (leftovers of an interrupted run), but
 * those retired and kept for readers until due. */
export async function removeUnlisted(dataDir: string, manifest: Manifest): Promise<string[]> {
	const removed: string[] = [];
	await rm(stagingDir(dataDir, manifest.chain), { recursive: true, force: true });
	// A manifest save cut short between its write and its rename; a later save would overwrite
	// it, but a run with nothing to commit would leave it for good.
	// (And the same for the previous generation's link; `_manifest.prev.json` itself is kept.)
	// (And the writer's status file's, follow/status-file.ts.)
	for (const tmp of [
		`${manifestPath(dataDir, manifest.chain)}.tmp`,
		`${previousManifestPath(dataDir, manifest.chain)}.tmp`,
		`${statusPath(dataDir, manifest.chain)}.tmp`,
		join(chainDir(dataDir, manifest.chain), "_retired.json.tmp"),
	]) {
		if (!existsSync(tmp)) continue;
		await rm(tmp, { force: true });
		removed.push(basename(tmp));
	}
	const keep = listedPaths(dataDir, manifest);
	// Files a writer retired and keeps for readers until due (retired-journal.ts): not
	// leftovers. The journal forgets the rest (deleted here, or gone already).
	const pending = pendingRetired(chainDir(dataDir, manifest.chain));
	dropRetired(
		chainDir(dataDir, manifest.chain),
		readRetired(chainDir(dataDir, manifest.chain))
			.flatMap((e) => e.files.map((f) => join(chainDir(dataDir, manifest.chain), f)))
			.filter((f) => !pending.has(f)),
	);
	// The Delta logs brought up to this manifest first (a crash may have come between a save and
	// its export): files they list, or removed within their retention, stay for outside readers.
	const lake = lakeExporter(chainDir(dataDir, manifest.chain));
	await lake.export(manifest);
	for (const d of [...DATASETS, ...INDEX_NAMES, GHOST_DATASET, ...METADATA_TABLE_NAMES, ...RANK_TABLES]) {
		const dir = join(dataDir, manifest.chain, d);
		let present: string[];
		try {
			present = await readdir(dir);
		} catch {
			continue;
		}
		for (const name of present) {
			const path = join(dir, name);
			if (keep.has(path) || name === LOG_DIR || lake.retains(path) || pending.has(path)) continue;
			await rm(join(dir, name), { force: true });
			removed.push(join(d, name));
			crashPoint("recover.file-removed");
		}
	}
	return removed;
}
