import type { Logger } from "../../util/logger.js";
import { saveManifest } from "../delta/save-manifest.js";
import type { ChunkEntry, Manifest } from "../format/records.js";
import { damagedIn } from "./verify.js";

/* Repair before writing (repair/): the damaged chunks a writer fetches again, damaged ghost files unlisted. */

/**
 * Before a backfill over a range (or a follower over the files it reads itself): finds the listed
 * files of the chunks and ghosts `which` picks that are missing, cut short or not as recorded (verify.ts's cheap check), and
 * returns their chunks, which the caller fetches again under new names (the generation in the
 * name: nothing listed is overwritten) and swaps for the damaged entries in the save that lists
 * the new ones, so readers never see a hole. Damaged files of reorged-out blocks cannot be
 * fetched again: they are unlisted at once, with a warning.
 */
export async function damagedChunks(
	dataDir: string,
	manifest: Manifest,
	which: (r: { from: number; to: number }, ghost: boolean) => boolean,
	logger: Logger,
): Promise<ChunkEntry[]> {
	const { chunks, ghosts, problems } = await damagedIn(dataDir, manifest, which);
	for (const p of problems) logger.warn(`damaged: ${p.file} (blocks ${p.from}..${p.to}): ${p.problem}`);
	if (ghosts.length > 0) {
		manifest.ghosts = (manifest.ghosts ?? []).filter((g) => !ghosts.includes(g));
		await saveManifest(dataDir, manifest);
		logger.warn(
			`unlisted ${ghosts.length} damaged files of reorged-out blocks: those blocks cannot be fetched again, and /blocks/{hash} no longer answers their hashes`,
		);
	}
	if (chunks.length > 0)
		logger.info(
			`fetching ${chunks.length} damaged ranges again: ${chunks.map((c) => `${c.from}..${c.to}`).join(", ")}`,
		);
	return chunks;
}
