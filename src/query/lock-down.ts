import { resolve } from "node:path";
import type { DuckDBInstance } from "@duckdb/node-api";
import { sqlString as quote } from "../util/sql-string.js";

/**
 * Confines a DuckDB instance to `dataDir`, so that even SQL the service did not mean to run
 * (a bug in how a statement is built) can read and write only the files of the data folder (the
 * store attaches the lookup databases there, query/store/lookup-dbs.ts): no other file
 * (read_csv('/etc/passwd'), COPY ... TO, ATTACH, EXPORT elsewhere), no URL, no
 * extension install or load beyond those built in, and no way back, since the configuration is
 * locked last (any later SET fails). Run it before the instance serves any query.
 *
 * DuckDB resolves symlinks before checking a path, so a symlink inside the data folder pointing
 * elsewhere is refused too: symlink the data folder as a whole instead. Spilling to disk is off
 * (temp_directory ''), as the spill folder would be writable to SQL as well; the query budget
 * cuts queries long before they could need it.
 */
export async function lockDown(instance: DuckDBInstance, dataDir: string): Promise<void> {
	await lockDownTo(instance, { directories: [resolve(dataDir)] });
}

/**
 * lockDown with the readable (and writable) places spelled out: whole `directories`, and single
 * files in `paths` (the SQL endpoint's instances: the listed Parquet files of one snapshot and
 * nothing else, not even the manifest or the key file beside them).
 */
export async function lockDownTo(
	instance: DuckDBInstance,
	allowed: { directories?: readonly string[]; paths?: readonly string[] },
): Promise<void> {
	const list = (items: readonly string[] = []) => `[${items.map(quote).join(", ")}]`;
	const conn = await instance.connect();
	try {
		// Order matters: allowed_directories can only be set while external access is still on.
		for (const statement of [
			"SET temp_directory = ''",
			// Not a lockdown setting, but must come before the lock: keep each file's footer
			// (schema, row-group statistics) in memory, so a query does not parse it again. GLOBAL: in
			// DuckDB 1.5 a plain SET of it holds for this connection alone, which closes below.
			"SET GLOBAL parquet_metadata_cache = true",
			// DuckDB's default, said and locked: a key's page oldest first is the scan's order (query/list.ts).
			"SET GLOBAL preserve_insertion_order = true",
			`SET allowed_directories = ${list(allowed.directories)}`,
			`SET allowed_paths = ${list(allowed.paths)}`,
			"SET autoinstall_known_extensions = false",
			"SET autoload_known_extensions = false",
			"SET allow_community_extensions = false",
			"SET allow_unsigned_extensions = false",
			"SET allow_persistent_secrets = false",
			"SET enable_external_access = false",
			"SET lock_configuration = true",
		]) {
			await conn.run(statement);
		}
	} finally {
		conn.closeSync();
	}
}
