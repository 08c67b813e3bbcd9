import { rename, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { type DuckDBConnection, DuckDBTypeId } from "@duckdb/node-api";
import type { Int64, Utf8, Vector } from "apache-arrow";
import { fsyncFile } from "../../util/fsync.js";

/*
 * Parquet files in smaller row groups than DuckDB writes. DuckDB's COPY writes at least 2,048
 * rows a group (ROW_GROUP_SIZE and ROW_GROUP_SIZE_BYTES below it are ignored: measured), and a
 * lookup decompresses the whole group its row sits in (all its pages: DuckDB skips none, measured
 * with pages of 16 KiB): a transaction record's group is about 3.3 MB of JSON once unpacked,
 * most of a `/txs/{hash}`'s 3-4 ms. The lookup records are therefore written by Apache Arrow's
 * Rust Parquet writer (the npm package parquet-wasm, a WebAssembly build: no native code,
 * nothing fetched at run time) in groups of a few hundred rows: on M's newest records, 65,536
 * rows a file, a lookup by DuckDB took 1.29 ms in groups of 512 against 3.7 in DuckDB's 2,048
 * (2% more bytes). Smaller groups pay off only in smaller files (DuckDB walks every group's
 * statistics, about 3 µs each): 256 rows in parts of 16 groups (INDEXES). So are a busy key's
 * slices in the by-address kinds, in groups of 512 (key-parts.ts sliceRows), beside parts DuckDB
 * wrote. DuckDB still reads them, as every other engine; only the writer differs. It is about
 * 3.5 times DuckDB's CPU a row (BENCHMARKS.md "ninth figures"): used only where a lookup pays.
 */

/**
 * Arrow and the Parquet writer, loaded at the first file written: Arrow's ~150 modules were a
 * fifth of every CLI's start-up, and a run that fails early, or only reads, writes no index.
 */
let writers: Promise<{ arrow: typeof import("apache-arrow"); wasm: typeof import("parquet-wasm") }> | undefined;
function loadWriters() {
	writers ??= import("apache-arrow").then((arrow) => ({
		arrow,
		// The Node build (CommonJS, its wasm loaded from beside it, synchronously).
		wasm: createRequire(import.meta.url)("parquet-wasm") as typeof import("parquet-wasm"),
	}));
	return writers;
}

/**
 * Writes the rows of `select` (a SELECT of our own text with its ORDER BY, every column VARCHAR or
 * BIGINT) at `path` in row groups of `rowGroupSize` rows, zstd, with min/max statistics;
 * atomically (a temporary name, fsync, rename). Returns the row count. Types as DuckDB's COPY
 * writes them (text as UTF-8 byte arrays, BIGINT as INT64, every column optional), so a statement
 * reads parts of either writer together. `dictionary`: dictionary-encode columns (Arrow's writer
 * gives a column's dictionary up past its page size), for files whose columns repeat (a busy key's
 * slice: one address, a few sides and tokens).
 */
export async function writeSmallGroups(
	conn: DuckDBConnection,
	select: string,
	path: string,
	rowGroupSize: number,
	dictionary = false,
): Promise<number> {
	const { arrow, wasm } = await loadWriters();
	const { Int64, Table, tableToIPC, Utf8, vectorFromArray } = arrow;
	const reader = await conn.runAndReadAll(select);
	const values = reader.getColumns();
	const types = reader.columnTypes();
	const vectors: Record<string, Vector<Utf8 | Int64>> = {};
	reader.columnNames().forEach((name, i) => {
		const column = values[i] ?? [];
		// Typed explicitly: an empty part has no value to infer a type from.
		if (types[i]?.typeId === DuckDBTypeId.BIGINT) {
			vectors[name] = vectorFromArray(column as (bigint | null)[], new Int64());
			return;
		}
		if (types[i]?.typeId !== DuckDBTypeId.VARCHAR)
			throw new Error(`writeSmallGroups: column ${name} is ${types[i]?.toString()}, not VARCHAR or BIGINT`);
		vectors[name] = vectorFromArray(column as (string | null)[], new Utf8());
	});
	const rows = reader.currentRowCount;
	const table = wasm.Table.fromIPCStream(tableToIPC(new Table(vectors), "stream"));
	const props = new wasm.WriterPropertiesBuilder()
		.setCompression(wasm.Compression.ZSTD)
		.setMaxRowGroupSize(rowGroupSize)
		// Lookup records' keys and records are all distinct: a dictionary would only be given up on.
		.setDictionaryEnabled(dictionary)
		.setStatisticsEnabled(wasm.EnabledStatistics.Chunk)
		.build();
	await writeFile(`${path}.tmp`, wasm.writeParquet(table, props));
	await fsyncFile(`${path}.tmp`);
	await rename(`${path}.tmp`, path);
	return rows;
}
