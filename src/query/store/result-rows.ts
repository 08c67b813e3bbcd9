import { type DuckDBMaterializedResult, JSDuckDBValueConverter } from "@duckdb/node-api";
import type { Row } from "./store.js";

/**
 * A materialized result's rows as JavaScript objects, read synchronously: the same objects as
 * `runAndReadAll().getRowObjectsJS()`, without its `fetch_chunk` calls. Each of those is a trip
 * through libuv's thread pool and back to the event loop (one per chunk, and one more to learn
 * there is none), though the rows are already in memory: about 0.1 ms of a 0.8 ms lookup
 * (BENCHMARKS.md "sixteenth figures").
 */
export function resultRows(result: DuckDBMaterializedResult): Row[] {
	const names = result.deduplicatedColumnNames();
	const rows: Row[] = [];
	for (let c = 0; c < result.chunkCount; c++) {
		const chunk = result.getChunk(c);
		for (let r = 0; r < chunk.rowCount; r++) {
			const row: Row = {};
			chunk.visitRowValues(r, (value, _row, column, type) => {
				row[names[column] as string] = JSDuckDBValueConverter(value, type, JSDuckDBValueConverter);
			});
			rows.push(row);
		}
	}
	return rows;
}
