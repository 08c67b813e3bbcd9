import { deriveIndexes } from "../chunks/chunk-store.js";
import { deleteNow, mergeAll } from "../chunks/merges.js";
import { applyLakeFlags } from "../delta/lake-flags.js";
import { saveManifest } from "../delta/save-manifest.js";
import { acquireWriteLock } from "../files/lock.js";
import { createParquetWriter } from "../files/parquet-writer.js";
import { DEFERRED, INDEX_NAMES, INDEXES, REPLACED, writtenWith } from "../format/indexes.js";
import { partPaths } from "../format/key-parts.js";
import { chainDir, partitionPath } from "../format/layout.js";
import { loadManifest } from "../format/manifest.js";
import { type LakeSettings, type Manifest, setChunkParts } from "../format/records.js";
import { ranksStep } from "../holdings/holder-ranks.js";
import { filterPath } from "../indexes/key-filter.js";
import { isIndexed, runFiles } from "../indexes/listing.js";
import { lookupDbOf } from "../indexes/lookup-db.js";
import { mergeStep, planWholeMerge } from "../indexes/runs.js";
import { createRetireLater } from "../retire/retire-later.js";
import { addBusyLists } from "./busy-lists.js";
import { DamagedFileError, damageBehind } from "./damage.js";
import { upgradeTypes } from "./upgrade-types.js";
import { checkRuns } from "./verify-runs.js";

/* `npm run reindex` (repair/): a chain's files brought up to this version's format, under its write lock. */

/**
 * Rewrites the files written with unsigned integer types, and index files in larger row groups
 * than this version writes (upgrade-types.ts, coarse-indexes.ts), then writes the index files a
 * chain's chunks lack (data written before indexes existed, or with new index kinds),
 * committing each entry in the manifest as it goes, so an interrupted run resumes. Takes
 * the chain's write lock: no backfill or follower may run meanwhile.
 */
export async function reindexChain(
	dataDir: string,
	chain: { id: string; number: number },
	onChunk?: (from: number, to: number) => void,
	/** Rows from which settled chunks are no longer merged (chunk-merges.ts); kept in the manifest. */
	compactRows?: number,
	/** Called for each manifest entry whose files got signed types (what it is, e.g. "blocks 0..999"). */
	onUpgrade?: (what: string) => void,
	/** The Delta Lake export's settings given (delta/lake-flags.ts); kept in the manifest. */
	lake: Partial<LakeSettings> = {},
	/** Then each lookup index's settled history merged into one run (runs.ts planWholeMerge). */
	wholeHistory = false,
): Promise<number> {
	const release = await acquireWriteLock(chainDir(dataDir, chain.id));
	const writer = await createParquetWriter();
	let done = 0;
	let loaded: Manifest | null = null;
	try {
		const manifest = await loadManifest(dataDir, chain.id, chain.number);
		loaded = manifest;
		if (applyLakeFlags(manifest, lake)) await saveManifest(dataDir, manifest);
		// Damaged merged runs (npm run verify names them): unlisted, so their chunks' index files
		// are written again from the datasets below and merged anew.
		const damaged = await checkRuns(dataDir, manifest);
		if (damaged.length > 0) {
			const gone = new Set(damaged.map((p) => p.run));
			manifest.runs = (manifest.runs ?? []).filter((r) => !gone.has(r));
			await saveManifest(dataDir, manifest);
			await deleteNow(
				[...gone].flatMap((r) => {
					const path = partitionPath(dataDir, chain.id, r.index, r);
					return [...partPaths(path, r.parts), filterPath(path), ...lookupDbOf(r, path)];
				}),
			);
		}
		// Folders written before it was recorded: the writers' partition size is the longest chunk.
		manifest.partition_size ??= Math.max(1, ...manifest.chunks.map((c) => c.to - c.from + 1));
		if (compactRows !== undefined && compactRows !== manifest.compact_rows) {
			manifest.compact_rows = compactRows;
			await saveManifest(dataDir, manifest);
		}
		// The files they replace go after the grace period, or at the next writer's start if this run ends first.
		const retired = createRetireLater(chainDir(dataDir, chain.id));
		// Signed types first: the indexes and merges below read these files, and keep their types.
		await upgradeTypes(
			writer,
			dataDir,
			manifest,
			async (files) => {
				retired.retire(files);
				await retired.sweep();
			},
			onUpgrade,
		);
		for (const c of manifest.chunks) {
			const wanted = writtenWith(c.datasets).filter((i) => !isIndexed(manifest, i, c));
			if (wanted.length === 0) continue;
			await deriveIndexes(writer, dataDir, chain.id, c, wanted);
			await saveManifest(dataDir, manifest);
			onChunk?.(c.from, c.to);
			done++;
		}
		// Index kinds a newer one replaced, once every chunk has the newer: unlisted, then deleted.
		const replaced = dropReplaced(dataDir, manifest);
		if (replaced.length > 0) {
			await saveManifest(dataDir, manifest);
			retired.retire(replaced);
			await retired.sweep();
		}
		// Then the merged runs and chunks (merges.ts).
		await mergeAll(writer, dataDir, manifest, async (files) => {
			retired.retire(files);
			await retired.sweep();
		});
		// `--whole-history`: a quiet wallet then reads one file of the settled history, not one a
		// level. The lookup kinds only: the balance deltas (DEFERRED) keep their runs, whose bounds a
		// balance at a past block starts from (query/deltas.ts: in one run of the whole history,
		// every holding active on both sides of that block would be summed again from transfers).
		if (wholeHistory)
			for (const index of INDEX_NAMES.filter((i) => !DEFERRED.includes(i))) {
				const gone = await mergeStep(writer, dataDir, manifest, index, undefined, planWholeMerge);
				if (!gone) continue;
				retired.retire(gone);
				await retired.sweep();
			}
		// Key filters from before their busy keys were listed (busy-lists.ts).
		await addBusyLists(writer, dataDir, manifest);
		// Then the holder ranks over the runs (holder-ranks.ts).
		const gone = await ranksStep(writer, dataDir, manifest);
		if (gone) retired.retire(gone);
		return done;
	} catch (err) {
		// A dataset file it read is damaged: named with the backfill that repairs it, not in DuckDB's words.
		const damage = loaded && (await damageBehind(dataDir, loaded, err));
		throw damage ? new DamagedFileError(damage) : err;
	} finally {
		writer.close();
		release();
	}
}

/**
 * Unlists the files of index kinds that were replaced (indexes.ts `replacedBy`) where every chunk
 * of their source dataset has the replacement, and returns them: the new kind answers alone, and
 * keeping both would add its bytes to the old one's instead of replacing them.
 */
function dropReplaced(dataDir: string, m: Manifest): string[] {
	const gone: string[] = [];
	for (const [old, by] of REPLACED) {
		const source = INDEXES[old].source;
		if (!m.chunks.every((c) => !c.datasets.includes(source) || isIndexed(m, by, c))) continue;
		const runs = (m.runs ?? []).filter((r) => r.index === old);
		const chunks = m.chunks.filter((c) => c.indexes?.includes(old));
		if (runs.length === 0 && chunks.length === 0) continue;
		gone.push(...runFiles(dataDir, { ...m, runs }));
		for (const c of chunks) {
			const path = partitionPath(dataDir, m.chain, old, c);
			gone.push(...partPaths(path, c.parts?.[old]), filterPath(path));
			c.indexes = c.indexes?.filter((i) => i !== old);
			setChunkParts(c, old, { parts: 1, cuts: [] });
		}
		m.runs = (m.runs ?? []).filter((r) => r.index !== old);
	}
	return gone;
}
