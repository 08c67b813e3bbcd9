import { rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";
import { crashPoint } from "../../util/crash-point.js";
import { fsyncDir, fsyncFile } from "../../util/fsync.js";
import { sqlString as quote } from "../../util/sql-string.js";
import { removingOnFailure } from "../../util/temp-files.js";

/** A lookup database's one table. */
export const LOOKUP_TABLE = "records";

let writes = 0;

/**
 * Writes the rows of Parquet index `files` (every part of one run) into a DuckDB database at
 * `path`: table LOOKUP_TABLE, sorted by `key`, with an ART index on it. Atomically (a temporary
 * name, synced, then renamed, its folder synced): a crash leaves a `.tmp` the next start removes
 * or nothing. Returns the rows written.
 */
export async function writeLookupDb(conn: DuckDBConnection, files: readonly string[], key: string, path: string) {
	const tmp = `${path}.tmp`;
	// DuckDB's write-ahead log beside it, should a write stop before its checkpoint.
	const temps = [tmp, `${tmp}.wal`];
	await Promise.all(temps.map((t) => rm(t, { force: true })));
	const alias = `lookup_write_${++writes}`;
	return removingOnFailure(temps, async () => {
		await conn.run(`ATTACH ${quote(tmp)} AS ${alias}`);
		let rows: number;
		try {
			const k = `"${key.replace(/[^a-z_]/g, "")}"`;
			await conn.run(
				`CREATE TABLE ${alias}.${LOOKUP_TABLE} AS SELECT * FROM read_parquet([${files.map(quote).join(", ")}]) ORDER BY ${k}`,
			);
			// Not UNIQUE: a run's keys are distinct (indexes/runs.ts merges settled chunks only), but
			// an index that refused a duplicate would stop the merges over a fault a lookup can bear.
			await conn.run(`CREATE INDEX ${LOOKUP_TABLE}_by_${k.slice(1, -1)} ON ${alias}.${LOOKUP_TABLE} (${k})`);
			rows = Number((await conn.runAndReadAll(`SELECT count(*) FROM ${alias}.${LOOKUP_TABLE}`)).getRows()[0]?.[0]);
			await conn.run(`CHECKPOINT ${alias}`);
		} finally {
			await conn.run(`DETACH ${alias}`);
		}
		await fsyncFile(tmp);
		crashPoint("lookup-db.tmp-written");
		await rename(tmp, path);
		await fsyncDir(dirname(path));
		return rows;
	});
}
