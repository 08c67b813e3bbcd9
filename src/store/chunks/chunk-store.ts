import { DATASETS, type DatasetName, type DatasetRows, TRACE_DATASETS } from "../../extract/rows.js";
import type { TraceFormat } from "../../rpc/types.js";
import { crashPoint } from "../../util/crash-point.js";
import { saveManifest } from "../delta/save-manifest.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { INDEX_NAMES, type IndexName, writtenWith } from "../format/indexes.js";
import { partitionPath, stagingDir } from "../format/layout.js";
import { chunkFiles, GHOST_DATASET, nextGeneration } from "../format/manifest.js";
import { type ChunkEntry, type GhostEntry, type Manifest, setChunkParts } from "../format/records.js";
import { type FilteredFile, writeKeyFilters } from "../indexes/key-filter.js";

/* Committing chunks (chunks/): a block range's files written, then listed in one manifest save. */

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
	// (A kind since replaced stays listed where the chunk has it: readers use it until reindex.)
	entry.indexes = INDEX_NAMES.filter((i) => has.has(i));
	const filtered: FilteredFile[] = [];
	for (const i of only) {
		const path = partitionPath(dataDir, chain, i, entry);
		const written = await writer.derive(i, (d) => partitionPath(dataDir, chain, d, entry), path);
		setChunkParts(entry, i, written);
		filtered.push({ path, index: i, parts: written.parts, rows: written.rows });
		crashPoint("chunk.index-written");
	}
	// The files' key filters after them, together (a small chunk's in one statement): nothing lists
	// the files before the caller's manifest save, which comes after this.
	await writeKeyFilters(writer, filtered);
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
	// Adjacent chunks in chain order: their files' rows are in the merged file's order as they are.
	const inOrder = [...group].sort((a, b) => a.from - b.from);
	for (const d of merged.datasets) {
		const files = inOrder.map((c) => partitionPath(dataDir, chain, d, c));
		merged.rows[d] = await writer.concat(d, files, partitionPath(dataDir, chain, d, merged));
		afterEach();
	}
	return merged;
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
