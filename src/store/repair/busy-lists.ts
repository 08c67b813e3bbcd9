import type { ParquetWriter } from "../files/parquet-writer.js";
import { INDEX_NAMES, INDEXES, type IndexDef } from "../format/indexes.js";
import type { Manifest } from "../format/records.js";
import { loadKeyFilter, writeKeyFilter } from "../indexes/key-filter.js";
import { indexFiles } from "../indexes/listing.js";

/** The index kinds whose key filters list their busy keys (indexes.ts `busyRows`). */
const WITH_BUSY = INDEX_NAMES.filter((i) => (INDEXES[i] as IndexDef).busyRows !== undefined);

/**
 * Key filters written before they listed their file's busy keys with their rows
 * (indexes/key-filter.ts), rewritten with them: without the list, every wallet of the file is
 * read window by window as a busy one is; without the rows, a busy wallet's windows cannot be
 * sized to its page (query/list.ts). The filter is written aside, then renamed over the old one;
 * its bits are the same, so a reader holding the old one stays right. Returns how many it rewrote.
 */
export async function addBusyLists(writer: ParquetWriter, dataDir: string, m: Manifest): Promise<number> {
	let done = 0;
	for (const index of WITH_BUSY)
		for (const f of indexFiles(dataDir, m, index)) {
			// (A damaged or missing filter is rebuilt here too.)
			const filter = f.filter ? await loadKeyFilter(f.filter).catch(() => undefined) : undefined;
			if (filter?.busyRows !== undefined) continue;
			await writeKeyFilter(writer, f.path, index, f.parts);
			done++;
		}
	return done;
}
