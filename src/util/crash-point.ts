import { writeSync } from "node:fs";

/**
 * Crash points (failpoints, as in TiKV or FoundationDB): named moments of the write paths where
 * a crash could leave the data folder half-changed. With `CHAINLAKE_CRASH_AT=<name>` (or
 * `<name>:<n>`, the n-th time that point is reached) the process SIGKILLs itself right there,
 * exactly like an external `kill -9` landing at that instant, so a test can crash at every such
 * moment deterministically instead of hoping a timed kill lands there (test/crash/).
 *
 * Without the variable a crash point costs one comparison: the variable is read once, at load.
 */
export const CRASH_POINTS = [
	// store/files/lock.ts
	"lock.acquired", // lock taken and our pid written, nothing else done
	// store/retire/remove-unlisted.ts
	"recover.file-removed", // start-up cleanup of a crashed run's leftovers, after each file removed
	// store/chunks/chunk-store.ts
	"chunk.dataset-written", // one dataset file of a chunk renamed into place, the next not yet written
	"chunk.index-written", // one index file of a chunk written, the next (or the key filters, then the manifest) not yet
	"chunk.files-written", // every file of a chunk in place, the manifest does not list it yet
	// store/files/parquet-writer.ts
	"parquet.write.tmp-written", // a dataset's <file>.tmp complete, not yet renamed
	"parquet.write.renamed", // the file renamed into place, its staged NDJSON not yet removed
	"parquet.merge.tmp-written", // a merged (compacted or ghost) <file>.tmp complete, not yet renamed
	"parquet.derive.tmp-written", // an index's <file>.tmp complete, not yet renamed
	// store/files/lookup-db-writer.ts
	"lookup-db.tmp-written", // a lookup database's <file>.tmp complete (checkpointed, synced), not yet renamed
	// store/format/manifest.ts
	"manifest.tmp-written", // _manifest.json.tmp complete, not yet renamed over _manifest.json
	"manifest.saved", // the new manifest in place (the commit), the caller not yet told
	// store/delta/delta-log.ts
	"delta.committed", // one table's Delta commit for a save written, the other tables' not yet
	// backfill/backfill.ts
	"backfill.chunk-fetched", // a chunk's rows in memory (the next chunk's fetch started), nothing written
	"backfill.chunk-committed", // a chunk listed in the manifest, the next chunk's fetch in flight
	// follow/follower.ts
	"follow.started", // lock taken and leftovers removed, the first step not begun
	"follow.append.fetched", // new blocks fetched, nothing written
	"follow.append.chunk-written", // one chunk of an append written, the others and the manifest not yet
	"follow.append.committed", // the append listed in the manifest, compaction not begun
	"follow.compact.dataset-merged", // one merged dataset file written, the rest not yet
	"follow.compact.files-written", // every merged file and index written, the manifest still lists the small chunks
	"follow.compact.swapped", // the manifest lists the merged chunk, the small files not yet retired
	"follow.retire.file-removed", // deleting replaced files after their grace period, after each file
	"follow.reorg.detected", // orphaned chunks found, nothing written
	"follow.reorg.ghosts-written", // the orphaned blocks' ghost file written, the manifest still lists the orphans
	"follow.reorg.committed", // the manifest without the orphans (ghosts listed) saved, canonical blocks not yet appended
	// store/indexes/runs.ts
	"runs.merged", // a merged index run file written, no filter yet, the manifest still lists its inputs
	"runs.filter-written", // the run's key filter written too, the manifest still lists the inputs
	"runs.lookup-db-written", // a lookup index's run: its DuckDB database written too, the manifest still lists the inputs
	"runs.committed", // the manifest lists the run, its inputs not yet deleted
	// store/chunks/chunk-merges.ts
	"chunks.merged", // a merged chunk's dataset and index files written, the manifest still lists its inputs
	"chunks.committed", // the manifest lists the merged chunk, its inputs not yet deleted
	// store/holdings/token-metadata.ts
	"metadata.written", // a range's token metadata files written, the manifest does not list them
	"metadata.committed", // the manifest lists them
	// store/holdings/holder-ranks.ts
	"ranks.written", // the holder ranks' file and every wallet records part written, the manifest does not list them
	// store/holdings/head-ranks.ts
	"head-ranks.written", // the head ranks' parts written, the manifest does not list them
] as const;

export type CrashPointName = (typeof CRASH_POINTS)[number];

/** The point to crash at (and at which arrival), parsed once from CHAINLAKE_CRASH_AT. */
const target = parseTarget(process.env.CHAINLAKE_CRASH_AT);
let arrivals = 0;

function parseTarget(spec: string | undefined): { name: CrashPointName; n: number } | null {
	if (!spec) return null;
	const m = /^([a-z.-]+)(?::([1-9]\d*))?$/.exec(spec);
	const name = m?.[1] as CrashPointName | undefined;
	// A misspelt point would silently never fire, and a crash test would pass without crashing.
	if (!name || !CRASH_POINTS.includes(name)) {
		throw new Error(
			`CHAINLAKE_CRASH_AT=${JSON.stringify(spec)} is not <point> or <point>:<n> with a point of ${CRASH_POINTS.join(", ")}`,
		);
	}
	return { name, n: Number(m?.[2] ?? 1) };
}

/** SIGKILLs this process if CHAINLAKE_CRASH_AT names this point and arrival. */
export function crashPoint(name: CrashPointName): void {
	if (target === null || target.name !== name || ++arrivals !== target.n) return;
	// Synchronous, so the line is out before the process dies; tests read it to see where it died.
	writeSync(2, `crash point ${name}:${arrivals} reached: SIGKILL\n`);
	// A signal a process sends itself is delivered before kill() returns: nothing after this runs,
	// no finally block, no exit handler, no buffered write, just as with an external kill -9.
	process.kill(process.pid, "SIGKILL");
}
