import { rm } from "node:fs/promises";
import type { TokenReader } from "../rpc/token-reads.js";
import { chunkMergeStep, planChunkMerge } from "./chunk-merges.js";
import { deriveIndexes } from "./chunk-store.js";
import { INDEX_NAMES, type IndexName, indexesFor, SETTLED_ONLY } from "./indexes.js";
import { filterPath } from "./key-filter.js";
import { partitionPath } from "./layout.js";
import { isIndexed } from "./listing.js";
import { type ChunkEntry, type Manifest, saveManifest } from "./manifest.js";
import type { ParquetWriter } from "./parquet-writer.js";
import { mergeStep, planMerge, settledChunks } from "./runs.js";
import { metadataDue, metadataStep } from "./token-metadata.js";

/*
 * The background work on settled chunks, in the order it must run: the settled-only index files
 * (indexes.ts) first, then each index's runs (runs.ts), then the chunks' dataset files
 * (chunk-merges.ts), whose groups must lie within one run of every index. Writers that have a
 * node also read the metadata of the tokens the settled chunks moved (token-metadata.ts).
 */

/** A writer's node, for token metadata; `uris`: also each NFT's tokenURI/uri (one call per id). */
export interface MetadataSource {
	reader: TokenReader;
	uris: boolean;
}

type Exclusive = <T>(commit: () => Promise<T>) => Promise<T>;

/** The first settled chunk lacking a settled-only index, with those it lacks. */
function underived(m: Manifest): { chunk: ChunkEntry; missing: IndexName[] } | null {
	for (const chunk of settledChunks(m)) {
		const missing = indexesFor(chunk.datasets).filter((i) => SETTLED_ONLY.includes(i) && !isIndexed(m, i, chunk));
		if (missing.length > 0) return { chunk, missing };
	}
	return null;
}

/**
 * Writes the settled-only index files of the next settled chunk lacking them and lists them in
 * one save. Returns [] (nothing unlisted), or null when no chunk lacks any.
 */
async function deriveStep(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	exclusive: Exclusive = (commit) => commit(),
): Promise<string[] | null> {
	const due = underived(m);
	if (!due) return null;
	// Into a copy: the live entry must not list files before they exist (a save by another
	// writer sharing `m` could commit it meanwhile).
	const copy: ChunkEntry = { ...due.chunk, indexes: [...(due.chunk.indexes ?? [])] };
	await deriveIndexes(writer, dataDir, m.chain, copy, due.missing);
	return exclusive(async () => {
		// A repair or a reorg may have unlisted the chunk meanwhile: then the new files go too.
		if (!m.chunks.includes(due.chunk))
			return due.missing.flatMap((i) => {
				const path = partitionPath(dataDir, m.chain, i, copy);
				return [path, filterPath(path)];
			});
		due.chunk.indexes = copy.indexes;
		await saveManifest(dataDir, m);
		return [];
	});
}

/** Whether any merge is due. */
export const mergeDue = (dataDir: string, m: Manifest, metadata?: MetadataSource): boolean =>
	(metadata !== undefined && metadataDue(m)) ||
	underived(m) !== null ||
	INDEX_NAMES.some((i) => planMerge(dataDir, m, i) !== null) ||
	planChunkMerge(m) !== null;

/** Runs the next due merge; returns the files its commit unlisted, or null when none was due. */
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
	return chunkMergeStep(writer, dataDir, m, exclusive);
}

/** Runs every due merge; `retire` gets each commit's unlisted files. Returns the merges done. */
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
		const gone = await mergeNext(writer, dataDir, m, undefined, metadata);
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
