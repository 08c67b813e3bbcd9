import { deriveIndexes } from "./chunk-store.js";
import { indexesFor } from "./indexes.js";
import { chainDir } from "./layout.js";
import { acquireWriteLock } from "./lock.js";
import { loadManifest, saveManifest } from "./manifest.js";
import { createParquetWriter } from "./parquet-writer.js";

/**
 * Writes the index files a chain's chunks lack (data written before indexes existed, or with
 * new index kinds), committing each chunk's in the manifest as it goes, so an interrupted run
 * resumes. Takes the chain's write lock: no backfill or follower may run meanwhile.
 */
export async function reindexChain(
	dataDir: string,
	chain: { id: string; number: number },
	onChunk?: (from: number, to: number) => void,
): Promise<number> {
	const release = acquireWriteLock(chainDir(dataDir, chain.id));
	const writer = await createParquetWriter();
	let done = 0;
	try {
		const manifest = await loadManifest(dataDir, chain.id, chain.number);
		for (const c of manifest.chunks) {
			const wanted = indexesFor(c.datasets);
			if (wanted.every((i) => c.indexes?.includes(i))) continue;
			await deriveIndexes(writer, dataDir, chain.id, c);
			await saveManifest(dataDir, manifest);
			onChunk?.(c.from, c.to);
			done++;
		}
		return done;
	} finally {
		writer.close();
		release();
	}
}
