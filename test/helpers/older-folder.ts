import { cp, rm } from "node:fs/promises";
import { saveManifest } from "../../src/store/delta/save-manifest.js";
import { createParquetWriter } from "../../src/store/files/parquet-writer.js";
import type { IndexName } from "../../src/store/format/indexes.js";
import { partPaths } from "../../src/store/format/key-parts.js";
import { partitionPath } from "../../src/store/format/layout.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { setChunkParts } from "../../src/store/format/records.js";
import { filterPath, writeKeyFilter } from "../../src/store/indexes/key-filter.js";
import { isIndexed } from "../../src/store/indexes/listing.js";

/**
 * A copy of folder `from` at `to` as a version before index kind `now` wrote it: each chunk's
 * `now` rows (its own files or a merged run's) replaced by the `old` kind's own files (written
 * from the chunk's datasets, with their key filters), `now`'s files deleted, for each [old, now] pair.
 */
export async function olderCopy(
	from: string,
	to: string,
	chain: { id: string; number: number },
	pairs: readonly (readonly [old: IndexName, now: IndexName])[],
): Promise<string> {
	await cp(from, to, { recursive: true });
	const m = await loadManifest(to, chain.id, chain.number);
	const writer = await createParquetWriter();
	try {
		for (const [old, now] of pairs) {
			for (const c of m.chunks) {
				// (A chunk a merged run covers has no file of its own: written all the same.)
				if (!isIndexed(m, now, c)) continue;
				const path = partitionPath(to, chain.id, old, c);
				const written = await writer.derive(old, (d) => partitionPath(to, chain.id, d, c), path);
				await writeKeyFilter(writer, path, old, written.parts);
				const gone = partitionPath(to, chain.id, now, c);
				if (c.indexes?.includes(now))
					for (const f of [...partPaths(gone, c.parts?.[now]), filterPath(gone)]) await rm(f, { force: true });
				setChunkParts(c, now, { parts: 1, cuts: [] });
				setChunkParts(c, old, written);
				c.indexes = [...(c.indexes ?? []).filter((i) => i !== now), old];
			}
			for (const r of (m.runs ?? []).filter((x) => x.index === now)) {
				const path = partitionPath(to, chain.id, now, r);
				for (const f of [...partPaths(path, r.parts), filterPath(path)]) await rm(f, { force: true });
			}
			m.runs = (m.runs ?? []).filter((r) => r.index !== now);
		}
	} finally {
		writer.close();
	}
	await saveManifest(to, m);
	return to;
}
