import type { DuckDBInstance } from "@duckdb/node-api";

/** The rows of `sql` on a connection of its own to `db`, as DuckDB's JS values (BIGINT as bigint). */
export async function rowsOf(db: DuckDBInstance, sql: string): Promise<Record<string, unknown>[]> {
	const conn = await db.connect();
	try {
		return (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
	} finally {
		conn.closeSync();
	}
}
