import { existsSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { basename, join } from "node:path";
import { DATASETS, type DatasetName, type DatasetRows, TRACE_DATASETS } from "../extract/rows.js";
import type { TraceFormat } from "../rpc/types.js";
import { crashPoint } from "../util/crash-point.js";
import { LOG_DIR } from "./delta/delta-log.js";
import { lakeExporter } from "./delta/lake-export.js";
import { RANK_TABLES } from "./holder-ranks.js";
import { INDEX_NAMES, INDEXES, type IndexName, indexesFor, writtenWith } from "./indexes.js";
import { buildKeyFilter, filterPath, saveKeyFilter } from "./key-filter.js";
import { chainDir, manifestPath, partitionPath, stagingDir, statusPath } from "./layout.js";
import { listedPaths } from "./listing.js";
import {
	type ChunkEntry,
	chunkFiles,
	GHOST_DATASET,
	type GhostEntry,
	type Manifest,
	nextGeneration,
	saveManifest,
} from "./manifest.js";
import { previousManifestPath } from "./manifest-check.js";
import type { ParquetWriter } from "./parquet-writer.js";
import { dropRetired, pendingRetired, readRetired } from "./retired-journal.js";
import { METADATA_TABLE_NAMES } from "./token-metadata.js";

export interface ChunkRange {
	from: number;
	to: number;
	traces: TraceFormat | null;
	firstParentHash: string;
	lastHash: string;
	/** The manifest generation that will list the chunk (nextGeneration): part of its file names. */
	gen: number;
}

/**
 * Writes the files of one chunk (a block range) of every dataset, without listing it in the
 * manifest: until a manifest that lists it is saved, readers never see it, and a crash leaves
 * only files that `removeUnlisted` deletes.
 */
export async function writeChunkFiles(
	writer: ParquetWriter,
	dataDir: string,
	chain: string,
	range: ChunkRange,
	rows: DatasetRows,
): Promise<ChunkEntry> {
	const datasets = DATASETS.filter((d) => range.traces != null || !TRACE_DATASETS.includes(d));
	const counts: Partial<Record<DatasetName, number>> = {};
	const entry: ChunkEntry = {
		from: range.from,
		to: range.to,
		traces: range.traces ?? "none",
		datasets,
		rows: counts,
		first_parent_hash: range.firstParentHash,
		last_hash: range.lastHash,
		gen: range.gen,
	};
	for (const d of datasets) {
		counts[d] = await writer.write(d, rows[d], partitionPath(dataDir, chain, d, entry), stagingDir(dataDir, chain));
		crashPoint("chunk.dataset-written");
	}
	await deriveIndexes(writer, dataDir, chain, entry);
	return entry;
}

/** Writes the chunk's index files from its dataset files and lists them in `entry.indexes`. */
export async function deriveIndexes(
	writer: ParquetWriter,
	dataDir: string,
	chain: string,
	entry: ChunkEntry,
	/** Only these (the others the chunk has, or a merged run holds); default those written with a chunk. */
	only: IndexName[] = writtenWith(entry.datasets),
) {
	const has = new Set([...(entry.indexes ?? []), ...only]);
	entry.indexes = indexesFor(entry.datasets).filter((i) => has.has(i));
	for (const i of only) {
		const path = partitionPath(dataDir, chain, i, entry);
		await writer.derive(i, (d) => partitionPath(dataDir, chain, d, entry), path);
		await writeKeyFilter(writer, path, INDEXES[i].key);
		crashPoint("chunk.index-written");
	}
}

/**
 * Writes the dataset files of one chunk covering the adjacent chunks `group` (one trace source,
 * the same datasets), each dataset's files merged into one, without listing it; `afterEach` runs
 * once a dataset's file is in place (a crash point). For compaction and chunk merges.
 */
export async function mergeChunkDatasets(
	writer: ParquetWriter,
	dataDir: string,
	chain: string,
	group: readonly ChunkEntry[],
	gen: number,
	afterEach: () => void = () => {},
): Promise<ChunkEntry> {
	const first = group[0] as ChunkEntry;
	const last = group.at(-1) as ChunkEntry;
	const merged: ChunkEntry = {
		from: first.from,
		to: last.to,
		traces: first.traces,
		datasets: first.datasets,
		rows: {},
		first_parent_hash: first.first_parent_hash,
		last_hash: last.last_hash,
		gen,
	};
	for (const d of merged.datasets) {
		const files = group.map((c) => partitionPath(dataDir, chain, d, c));
		merged.rows[d] = await writer.merge(d, files, partitionPath(dataDir, chain, d, merged));
		afterEach();
	}
	return merged;
}

/**
 * The key filter beside an index file (key-filter.ts): chunk files get one as runs do, so a
 * wallet or hash also skips the newest chunks no run covers yet.
 */
export async function writeKeyFilter(writer: ParquetWriter, path: string, key: string): Promise<number> {
	const keys = await writer.countDistinct(path, key);
	const { data } = await buildKeyFilter(writer.streamColumn(path, key), keys);
	await saveKeyFilter(filterPath(path), data);
	return keys;
}

/**
 * Writes a chunk's files, then lists it in the manifest (the commit point). Blocks of the chunk
 * that a follower had kept as ghosts leave the ghost list in the same save; their old ghost
 * files are unlisted and go at the next start's cleanup.
 */
export async function writeChunk(
	writer: ParquetWriter,
	dataDir: string,
	manifest: Manifest,
	range: Omit<ChunkRange, "gen">,
	rows: DatasetRows,
	blockHashes: readonly string[] = [],
): Promise<ChunkEntry> {
	const entry = await writeChunkFiles(
		writer,
		dataDir,
		manifest.chain,
		{ ...range, gen: nextGeneration(manifest) },
		rows,
	);
	crashPoint("chunk.files-written");
	await dropReturnedGhosts(writer, dataDir, manifest, new Set(blockHashes));
	manifest.chunks.push(entry);
	await saveManifest(dataDir, manifest);
	return entry;
}

/** An SQL condition keeping the rows whose `hash` is none of `hashes` (hex only, so safe as text). */
export function hashNotIn(hashes: Iterable<string>): string {
	const list = [...hashes].map((h) => `'${h.toLowerCase().replace(/[^0-9a-fx]/g, "")}'`);
	return list.length > 0 ? `hash NOT IN (${list.join(", ")})` : "true";
}

/**
 * Takes the blocks in `canonical` out of the ghost files (a reorg went back to blocks it had
 * dropped): the ghost files holding one of them are unlisted, and what else they held is
 * rewritten into one new file (one, so that its generation makes its name unique). Changes
 * `manifest.ghosts` only; the caller's next save commits it together with the canonical blocks.
 * Returns the ghost files that are no longer listed.
 */
export async function dropReturnedGhosts(
	writer: ParquetWriter,
	dataDir: string,
	manifest: Manifest,
	canonical: ReadonlySet<string>,
): Promise<string[]> {
	const ghosts = manifest.ghosts ?? [];
	const touched = ghosts.filter((g) => g.hashes?.some((h) => canonical.has(h)));
	if (touched.length === 0) return [];
	const files = touched.map((g) => partitionPath(dataDir, manifest.chain, GHOST_DATASET, g));
	const left = touched.flatMap((g) => g.hashes ?? []).filter((h) => !canonical.has(h));
	manifest.ghosts = ghosts.filter((g) => !touched.includes(g));
	if (left.length > 0) {
		const last = touched.reduce((a, b) => (b.to > a.to ? b : a));
		const merged: GhostEntry = {
			from: Math.min(...touched.map((g) => g.from)),
			to: last.to,
			last_hash: last.last_hash,
			gen: nextGeneration(manifest),
			hashes: left,
		};
		const path = partitionPath(dataDir, manifest.chain, GHOST_DATASET, merged);
		await writer.merge("blocks", files, path, hashNotIn(canonical));
		manifest.ghosts.push(merged);
	}
	return files;
}

/**
 * Swaps chunks in one manifest save (a reorg's orphaned ranges for the canonical ones, or
 * small ranges for their compacted whole): readers see the old set or the new, never a mix.
 * Returns the files that no longer belong, for the caller to delete once no reader needs them.
 */
export async function replaceChunks(
	dataDir: string,
	manifest: Manifest,
	remove: ChunkEntry[],
	add: ChunkEntry[],
): Promise<string[]> {
	const gone = new Set(remove);
	manifest.chunks = [...manifest.chunks.filter((c) => !gone.has(c)), ...add];
	await saveManifest(dataDir, manifest);
	return remove.flatMap((c) => chunkFiles(dataDir, manifest.chain, c));
}

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
	// Files a writer retired and keeps for readers until due (store/retired-journal.ts): not
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
