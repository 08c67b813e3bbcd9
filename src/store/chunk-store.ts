import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { TraceFormat } from "../extract/extract-block.js";
import { DATASETS, type DatasetName, type DatasetRows, TRACE_DATASETS } from "../extract/rows.js";
import { datasetDir, partitionFileName, partitionPath, stagingDir } from "./layout.js";
import { type ChunkEntry, type Manifest, saveManifest } from "./manifest.js";
import type { ParquetWriter } from "./parquet-writer.js";

/**
 * Writes one chunk (a block range) of every dataset, then records it in the manifest. The
 * manifest is saved last: after a crash anywhere before it, the chunk counts as not written,
 * its stray files are removed by `removeUnlisted` and the range is fetched again.
 */
export async function writeChunk(
	writer: ParquetWriter,
	dataDir: string,
	manifest: Manifest,
	range: { from: number; to: number; traces: TraceFormat | null; firstParentHash: string; lastHash: string },
	rows: DatasetRows,
): Promise<ChunkEntry> {
	const datasets = DATASETS.filter((d) => range.traces != null || !TRACE_DATASETS.includes(d));
	const counts: Partial<Record<DatasetName, number>> = {};
	const staging = stagingDir(dataDir, manifest.chain);
	for (const d of datasets) {
		const path = partitionPath(dataDir, manifest.chain, d, {
			from: range.from,
			to: range.to,
			last_hash: range.lastHash,
		});
		counts[d] = await writer.write(d, rows[d], path, staging);
	}
	const entry: ChunkEntry = {
		from: range.from,
		to: range.to,
		traces: range.traces ?? "none",
		datasets,
		rows: counts,
		first_parent_hash: range.firstParentHash,
		last_hash: range.lastHash,
	};
	manifest.chunks.push(entry);
	await saveManifest(dataDir, manifest);
	return entry;
}

/** Removes every data file the manifest does not list (leftovers of an interrupted run). */
export async function removeUnlisted(dataDir: string, manifest: Manifest): Promise<string[]> {
	const removed: string[] = [];
	await rm(stagingDir(dataDir, manifest.chain), { recursive: true, force: true });
	for (const d of DATASETS) {
		const dir = datasetDir(dataDir, manifest.chain, d);
		const listed = new Set(manifest.chunks.filter((c) => c.datasets.includes(d)).map((c) => partitionFileName(d, c)));
		let names: string[];
		try {
			names = await readdir(dir);
		} catch {
			continue;
		}
		for (const name of names) {
			if (listed.has(name)) continue;
			await rm(join(dir, name), { force: true });
			removed.push(join(d, name));
		}
	}
	return removed;
}
