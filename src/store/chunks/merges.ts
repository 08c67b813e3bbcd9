import { rm } from "node:fs/promises";
import type { TokenReader } from "../../rpc/token-reads.js";
import { saveManifest } from "../delta/save-manifest.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { DEFERRED, INDEX_NAMES, type IndexName, indexesFor } from "../format/indexes.js";
import { partPaths } from "../format/key-parts.js";
import { partitionPath } from "../format/layout.js";
import type { ChunkEntry, Manifest } from "../format/records.js";
import { metadataDue, metadataStep } from "../holdings/token-metadata.js";
import { filterPath } from "../indexes/key-filter.js";
import { isIndexed } from "../indexes/listing.js";
import { lookupDbDue, lookupDbStep } from "../indexes/lookup-db.js";
import { mergeStep, planMerge, settledChunks, unsettledChunks } from "../indexes/runs.js";
import { chunkMergeStep, planChunkMerge } from "./chunk-merges.js";
import { deriveIndexes } from "./chunk-store.js";

/*
 * The background work on settled chunks, in the order it must run: the deferred index files
 * (indexes.ts) first, then each index's runs (runs.ts), then the chunks' dataset files
 * (chunk-merges.ts), whose groups must lie within one run of every index. Writers that have a
 * node also read the metadata of the tokens the settled chunks moved (token-metadata.ts).
 * Last, when nothing else is due, the same index files for the chunks not yet settled (headStep):
 * balances at the head then read them instead of summing those chunks' transfers per request.
 */

/** A writer's node, for token metadata; `uris`: also each NFT's tokenURI/uri (one call per id). */
export interface MetadataSource {
	reader: TokenReader;
	uris: boolean;
}

type Exclusive = <T>(commit: () => Promise<T>) => Promise<T>;

/**
 * The first chunk lacking a deferred index, with those it lacks: among the settled chunks,
 * or (`head`) among the others, oldest first.
 */
function underived(m: Manifest, head = false): { chunk: ChunkEntry; missing: IndexName[] } | null {
	for (const chunk of head ? unsettledChunks(m) : settledChunks(m)) {
		const missing = indexesFor(chunk.datasets).filter((i) => DEFERRED.includes(i) && !isIndexed(m, i, chunk));
		if (missing.length > 0) return { chunk, missing };
	}
	return null;
}

/**
 * Writes the deferred index files of the next chunk lacking them (settled, or with `head`
 * not settled) and lists them in one save. Returns the files to retire ([] but when a reorg or a
 * repair unlisted the chunk meanwhile), or null when no chunk lacks any.
 */
async function deriveStep(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	exclusive: Exclusive = (commit) => commit(),
	head = false,
): Promise<string[] | null> {
	const due = underived(m, head);
	if (!due) return null;
	// Into a copy: the live entry must not list files before they exist (a save by another
	// writer sharing `m` could commit it meanwhile).
	const copy: ChunkEntry = { ...due.chunk, indexes: [...(due.chunk.indexes ?? [])] };
	await deriveIndexes(writer, dataDir, m.chain, copy, due.missing);
	return exclusive(async () => {
		// A repair, a reorg or a compaction may have unlisted the chunk meanwhile: then the new files go too.
		if (!m.chunks.includes(due.chunk))
			return due.missing.flatMap((i) => {
				const path = partitionPath(dataDir, m.chain, i, copy);
				return [...partPaths(path, copy.parts?.[i]), filterPath(path)];
			});
		due.chunk.indexes = copy.indexes;
		// The copy's split of every index (setChunkParts drops a record left empty).
		if (copy.parts) due.chunk.parts = copy.parts;
		else delete due.chunk.parts;
		if (copy.cuts) due.chunk.cuts = copy.cuts;
		else delete due.chunk.cuts;
		await saveManifest(dataDir, m);
		return [];
	});
}

/** Whether any merge is due (headStep's work included). */
export const mergeDue = (dataDir: string, m: Manifest, metadata?: MetadataSource): boolean =>
	(metadata !== undefined && metadataDue(m)) ||
	underived(m) !== null ||
	underived(m, true) !== null ||
	INDEX_NAMES.some((i) => planMerge(dataDir, m, i) !== null) ||
	lookupDbDue(m) !== undefined ||
	planChunkMerge(m) !== null;

/**
 * Runs the next due merge of settled chunks; returns the files its commit unlisted, or null when
 * none was due. (Not headStep's work: a writer runs that once nothing else is due.)
 */
export async function mergeNext(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	exclusive?: Exclusive,
	metadata?: MetadataSource,
): Promise<string[] | null> {
	const derived = await deriveStep(writer, dataDir, m, exclusive);
	if (derived) return derived;
	if (metadata) {
		const read = await metadataStep(writer, dataDir, m, metadata.reader, metadata.uris, exclusive);
		if (read) return read;
	}
	for (const index of INDEX_NAMES) {
		const gone = await mergeStep(writer, dataDir, m, index, exclusive);
		if (gone) return gone;
	}
	// Runs merged before lookup databases existed, or renamed by a type upgrade.
	const looked = await lookupDbStep(writer, dataDir, m, exclusive);
	if (looked) return looked;
	return chunkMergeStep(writer, dataDir, m, exclusive);
}

/**
 * The balance delta files (the deferred indexes) of the next chunk not yet settled that lacks
 * them, the oldest first: on M, with the open partition's deltas the busiest token's holders at
 * the head took 82-103 ms instead of 166-219 and a heavy wallet's native balance 20 instead of 150
 * (BENCHMARKS.md). In the background, after every other merge: a head block's commit never waits
 * for them (it did once: head lag p99 1.7 -> 2.3 s), and a chunk compacted or reorged meanwhile
 * just has its new files retired. Returns as mergeNext does.
 */
export const headStep = (writer: ParquetWriter, dataDir: string, m: Manifest, exclusive?: Exclusive) =>
	deriveStep(writer, dataDir, m, exclusive, true);

/** Runs every due merge, then headStep's; `retire` gets each commit's unlisted files. Returns the merges done. */
export async function mergeAll(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	retire: (files: string[]) => void | Promise<void>,
	stop: () => boolean = () => false,
	metadata?: MetadataSource,
): Promise<number> {
	let merges = 0;
	while (!stop()) {
		const gone = (await mergeNext(writer, dataDir, m, undefined, metadata)) ?? (await headStep(writer, dataDir, m));
		if (!gone) break;
		merges++;
		await retire(gone);
	}
	return merges;
}

/** Deletes files at once: for writers no API reader follows (synth), or files a crash left. */
export const deleteNow = async (files: string[]) => {
	for (const f of files) await rm(f, { force: true });
};
