import { readFile, rename, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { DuckDBConnection } from "@duckdb/node-api";
import { fsyncFile } from "../../util/fsync.js";
import { sqlString as quote } from "../../util/sql-string.js";

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
 * statistics, about 3 µs each): 256 rows in parts of 16 groups (INDEXES). So are the by-address
 * kinds, in groups of 512 in parts of 32 (indexes.ts BY_ADDRESS_ROW_GROUP_SIZE), their busy keys'
 * slices too. DuckDB still reads them, as every other engine; only the writer differs. DuckDB
 * sorts and stages each part, the Parquet writer regroups it: a chunk's `wallet_transfers` at M
 * took 1.37 times the wall time of DuckDB's COPY alone (BENCHMARKS.md "twenty-third figures").
 */

/**
 * The Parquet writer, loaded at the first file written: a run that fails early, or only reads,
 * writes no index. The Node build (CommonJS, its wasm loaded from beside it, synchronously).
 */
let wasm: typeof import("parquet-wasm") | undefined;
const loadWriter = () => {
	wasm ??= createRequire(import.meta.url)("parquet-wasm") as typeof import("parquet-wasm");
	return wasm;
};

/**
 * Writes the rows of `select` (a SELECT of our own text with its ORDER BY) at `path` in row
 * groups of `rowGroupSize` rows, zstd, with min/max statistics; atomically (a temporary name,
 * fsync, rename). Returns the row count. `dictionary`: dictionary-encode columns (the Parquet
 * writer gives a column's dictionary up past its page size), for files whose columns repeat (a
 * busy key's slice: one address, a few sides and tokens).
 */
export async function writeSmallGroups(
	conn: DuckDBConnection,
	select: string,
	path: string,
	rowGroupSize: number,
	dictionary = false,
): Promise<number> {
	const rows = await stageRows(conn, select, path);
	await regroup(path, rowGroupSize, dictionary);
	return rows;
}

/**
 * The first half of writeSmallGroups: DuckDB writes the rows of `select` in order at `path`'s
 * temporary name, uncompressed and in its own groups. Returns the row count. Async in DuckDB's
 * threads, so a writer of many parts stages the next while regroup (synchronous WebAssembly)
 * rewrites this one.
 */
export async function stageRows(conn: DuckDBConnection, select: string, path: string): Promise<number> {
	// COPY answers the rows it wrote.
	const copied = await conn.runAndReadAll(
		`COPY (${select}) TO ${quote(`${path}.tmp`)} (FORMAT parquet, COMPRESSION uncompressed)`,
	);
	return Number(copied.getRows()[0]?.[0] ?? 0);
}

/**
 * The second half: the Parquet writer reads the staged file into its own memory and writes it
 * again in small groups, then it goes in place. The rows never become JavaScript values (as they
 * did through Arrow's JavaScript vectors: a part of 16,384 by-address rows 0.59-2.3 s, this way
 * 0.36 with DuckDB's sort, the same bytes: BENCHMARKS.md "twenty-third figures"). The types are
 * DuckDB's (text as UTF-8 byte arrays, BIGINT as INT64, every column optional), so a statement
 * reads parts of either writer together.
 */
export async function regroup(path: string, rowGroupSize: number, dictionary: boolean): Promise<void> {
	const parquet = loadWriter();
	const tmp = `${path}.tmp`;
	const table = parquet.readParquet(await readFile(tmp));
	const props = new parquet.WriterPropertiesBuilder()
		.setCompression(parquet.Compression.ZSTD)
		.setMaxRowGroupSize(rowGroupSize)
		// Lookup records' keys and records are all distinct: a dictionary would only be given up on.
		.setDictionaryEnabled(dictionary)
		.setStatisticsEnabled(parquet.EnabledStatistics.Chunk)
		.build();
	await writeFile(tmp, parquet.writeParquet(table, props));
	await fsyncFile(tmp);
	await rename(tmp, path);
}
