import { type DuckDBMaterializedResult, DuckDBTypeId, JSDuckDBValueConverter } from "@duckdb/node-api";
import type { Row } from "./store.js";

/**
 * Column types whose vector items already are what JSDuckDBValueConverter makes of them (a string,
 * a number, a bigint, a boolean, or null): read as they are, without the converter's call.
 */
const AS_READ = new Set<DuckDBTypeId>([
	DuckDBTypeId.VARCHAR,
	DuckDBTypeId.BOOLEAN,
	DuckDBTypeId.TINYINT,
	DuckDBTypeId.SMALLINT,
	DuckDBTypeId.INTEGER,
	DuckDBTypeId.UTINYINT,
	DuckDBTypeId.USMALLINT,
	DuckDBTypeId.UINTEGER,
	DuckDBTypeId.FLOAT,
	DuckDBTypeId.DOUBLE,
	DuckDBTypeId.BIGINT,
	DuckDBTypeId.UBIGINT,
	DuckDBTypeId.HUGEINT,
	DuckDBTypeId.UHUGEINT,
]);

/**
 * A materialized result's rows as JavaScript objects, read synchronously: the same objects as
 * `runAndReadAll().getRowObjectsJS()`, without its `fetch_chunk` calls. Each of those is a trip
 * through libuv's thread pool and back to the event loop (one per chunk, and one more to learn
 * there is none), though the rows are already in memory: about 0.1 ms of a 0.8 ms lookup
 * (BENCHMARKS.md "sixteenth figures"). Read a column at a time, each column's vector and type
 * looked up once: row by row through the library's visitor, the lookups and the converter's call
 * for every value were a third of the time of a page of 101 wallet records (twenty-sixth figures).
 */
export function resultRows(result: DuckDBMaterializedResult): Row[] {
	const names = result.deduplicatedColumnNames();
	const rows: Row[] = [];
	for (let c = 0; c < result.chunkCount; c++) {
		const chunk = result.getChunk(c);
		const n = chunk.rowCount;
		const first = rows.length;
		for (let r = 0; r < n; r++) rows.push({});
		// Column by column, so each row's keys come in the columns' order, as row by row.
		for (let col = 0; col < chunk.columnCount; col++) {
			const vector = chunk.getColumnVector(col);
			const type = vector.type;
			const name = names[col] as string;
			const asRead = AS_READ.has(type.typeId);
			for (let r = 0; r < n; r++) {
				const value = vector.getItem(r);
				(rows[first + r] as Row)[name] = asRead ? value : JSDuckDBValueConverter(value, type, JSDuckDBValueConverter);
			}
		}
	}
	return rows;
}
