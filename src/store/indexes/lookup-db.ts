import { crashPoint } from "../../util/crash-point.js";
import { saveManifest } from "../delta/save-manifest.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { INDEXES, type IndexDef } from "../format/indexes.js";
import { partPaths } from "../format/key-parts.js";
import { partitionPath } from "../format/layout.js";
import type { Manifest, RunEntry } from "../format/records.js";

/*
 * Lookup databases: a merged run of an index marked `lookupDb` (indexes.ts: the block and
 * transaction records) copied into a DuckDB database file beside its Parquet parts
 * (`<run>.parquet.duckdb`), one table sorted by the key with an ART index on it, which the service
 * attaches read-only and reads for a lookup instead of the parts (query/store/lookup-dbs.ts).
 *
 * Why: every read of a Parquet file is bound and planned again (DuckDB's `read_parquet` says its
 * bind data cannot be cached), about a quarter of a lookup's time; a table of DuckDB's own format
 * keeps its plan in a prepared statement and finds the row through its index: a block lookup at M
 * 0.775 → 0.447 ms (BENCHMARKS.md "seventeenth figures"), through the API 0.71 of the time
 * ("twentieth figures"). The Parquet parts stay, the store every
 * other reader opens (DuckDB, Polars, Spark, the Delta export, a bucket reader); the database is a
 * copy of a run that never changes, like its key filter, and goes when the run goes. Runs only: a
 * chunk's own index file is read as Parquet until a merge takes it into a run.
 */

/** The lookup database of the run whose part 0 is `path`. */
export const lookupDbPath = (path: string) => `${path}.duckdb`;

/** Run `r`'s lookup database, if it has one (its part 0 at `path`). */
export const lookupDbOf = (r: RunEntry, path: string): string[] => (r.lookup_db ? [lookupDbPath(path)] : []);

/** The next run that should have a lookup database and has none (written before they existed, or by a type upgrade). */
export const lookupDbDue = (m: Manifest): RunEntry | undefined =>
	(m.runs ?? []).find((r) => (INDEXES[r.index] as IndexDef).lookupDb && !r.lookup_db);

/** Writes run `r`'s lookup database from its parts (before the run is listed, or beside a listed one). */
export async function writeRunLookupDb(writer: ParquetWriter, dataDir: string, m: Manifest, r: RunEntry) {
	const path = partitionPath(dataDir, m.chain, r.index, r);
	await writer.lookupDb(partPaths(path, r.parts), INDEXES[r.index].key, lookupDbPath(path));
	return lookupDbPath(path);
}

/**
 * Writes the lookup database of the next listed run lacking one and records it in one save.
 * Returns [] (nothing unlisted) once done, the new file if the run was unlisted meanwhile (a
 * merge or a repair), or null when no run lacks one.
 */
export async function lookupDbStep(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	exclusive: <T>(commit: () => Promise<T>) => Promise<T> = (commit) => commit(),
): Promise<string[] | null> {
	const run = lookupDbDue(m);
	if (!run) return null;
	const { gen } = run;
	const written = await writeRunLookupDb(writer, dataDir, m, run);
	crashPoint("runs.lookup-db-written");
	return exclusive(async () => {
		// A type upgrade renames a run's files under a new generation: this copy is of the old ones.
		if (!m.runs?.includes(run) || run.gen !== gen) return [written];
		run.lookup_db = true;
		await saveManifest(dataDir, m);
		return [];
	});
}
