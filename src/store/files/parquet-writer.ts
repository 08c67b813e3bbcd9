import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import type { DatasetName, DatasetRows } from "../../extract/rows.js";
import { crashPoint } from "../../util/crash-point.js";
import { fsyncDir, fsyncFile, mkdirDurably } from "../../util/fsync.js";
import { sqlString as quote } from "../../util/sql-string.js";
import { removingOnFailure } from "../../util/temp-files.js";
import { INDEXES, type IndexDef, type IndexName } from "../format/indexes.js";
import { partCondition, partPath, partsFor } from "../format/key-parts.js";
import { SCHEMAS, SORT_KEY } from "../format/schema.js";
import { writeSmallGroups } from "./small-groups.js";

/* The Parquet writer (files/): every store file written, merged and derived through one DuckDB, atomically and durably. */

/**
 * Parquet settings, and why:
 * - ROW_GROUP_SIZE: row groups are the unit DuckDB skips with min/max statistics and bloom
 *   filters; 64k rows keeps a point lookup's read small while the per-group metadata stays
 *   negligible.
 * - DICTIONARY_SIZE_LIMIT (entries per row group): DuckDB writes bloom filters only for
 *   dictionary-encoded chunks, and by default gives up on dictionaries for high-cardinality
 *   columns (addresses, hashes), so they would get none. Set per file to the largest row group's
 *   row count, so even an all-distinct column fits its dictionary and gets a bloom filter
 *   (test/store checks with parquet_metadata()). Not one fixed large value: DuckDB allocates
 *   for the limit up front in every column, which made a 4-row file take seconds (measured).
 * - zstd: the best size for hex-heavy data at a modest CPU cost.
 */
export const PARQUET_OPTIONS = {
	ROW_GROUP_SIZE: 65_536,
	BLOOM_FILTER_FALSE_POSITIVE_RATIO: 0.01,
	COMPRESSION: "zstd",
} as const;

export interface ParquetWriter {
	/**
	 * Writes `rows` to `path` atomically (temporary name, then rename) and durably (the file synced
	 * before its rename, its folder after: util/fsync.ts); returns the row count. So do merge and derive.
	 */
	write<D extends DatasetName>(dataset: D, rows: DatasetRows[D], path: string, stagingDir: string): Promise<number>;
	/** The same for rows of a table outside the datasets (`columns`: name → DuckDB type), sorted by `order`. */
	writeRows(
		columns: Record<string, string>,
		order: string,
		rows: readonly object[],
		path: string,
		stagingDir: string,
	): Promise<number>;
	/** Rows of a read-only SQL query over Parquet files (for the writers' own lookups). */
	select(sql: string): Promise<Record<string, unknown>[]>;
	/**
	 * Writes the rows of Parquet `files` (matching `where`, an SQL condition of the caller's own
	 * text) into one file at `path`, sorted, atomically; returns the row count. For compaction
	 * (small files into one) and for keeping reorged-out blocks.
	 */
	merge(dataset: DatasetName, files: string[], path: string, where?: string): Promise<number>;
	/**
	 * Merges index files (chunk files or runs of `index`, every part of each) into one run at
	 * `path`, sorted, in key-range parts when large (format/key-parts.ts); returns its rows and parts.
	 */
	mergeIndex(index: IndexName, files: string[], path: string): Promise<IndexWrite>;
	/** Distinct values of `column` in a file. */
	countDistinct(path: string, column: string): Promise<number>;
	/** The distinct values of a text column of a file, in batches (for key filters). */
	streamColumn(path: string, column: string): AsyncIterable<string[]>;
	/** The `hash` column of block files (blocks or ghost_blocks), in block order. */
	blockHashes(files: string[]): Promise<string[]>;
	/**
	 * Writes index `index` of a chunk from its dataset files (`fileOf`; see indexes.ts) at `path`,
	 * in key-range parts when large (format/key-parts.ts); returns its rows and parts.
	 */
	derive(index: IndexName, fileOf: (d: DatasetName) => string, path: string): Promise<IndexWrite>;
	/**
	 * Writes the rows of `query` (a SELECT of the caller's own text, with its ORDER BY) to `path` with
	 * COPY `options` (parquetCopyOptions, indexCopyOptions), atomically; returns the row count.
	 */
	copy(query: string, path: string, options: string): Promise<number>;
	close(): void;
}

/** What an index file's write made: its rows, and the key-range parts they went into. */
export interface IndexWrite {
	rows: number;
	parts: number;
}

/** ORDER BY of a dataset's or an index's files. */
export const orderOf = (name: DatasetName | IndexName): string =>
	name in INDEXES ? INDEXES[name as IndexName].sortKey : `"${SORT_KEY[name as DatasetName]}"`;

/** The rows of index `index` for one chunk, from its source dataset's file. */
export const indexRowsSql = (index: IndexName, fileOf: (d: DatasetName) => string): string => {
	const rel = (d: DatasetName) => `read_parquet(${quote(fileOf(d))})`;
	return INDEXES[index].select(rel(INDEXES[index].source), rel);
};

/** The COPY options for a file of `rows` rows (see PARQUET_OPTIONS for the dictionary limit). */
export function parquetCopyOptions(rows: number): string {
	const fixed = Object.entries(PARQUET_OPTIONS).map(([k, v]) => `${k} ${typeof v === "string" ? quote(v) : v}`);
	return `FORMAT parquet, ${fixed.join(", ")}, DICTIONARY_SIZE_LIMIT ${Math.min(rows, PARQUET_OPTIONS.ROW_GROUP_SIZE) + 1}`;
}

/**
 * Options of index files. Row groups are smaller than the datasets' (each index's rowGroupSize,
 * format/indexes.ts): a lookup decodes one whole row group of every column it reads. DuckDB's
 * default dictionary limit is kept: min/max statistics of the sorted key column do the pruning,
 * and bloom filters on every high-cardinality column would add about a third to the files
 * (BENCHMARKS.md); `address` itself repeats enough to stay dictionary-encoded, with a bloom filter.
 */
export const indexCopyOptions = (index: IndexName) =>
	`FORMAT parquet, COMPRESSION ${quote(PARQUET_OPTIONS.COMPRESSION)}, ROW_GROUP_SIZE ${INDEXES[index].rowGroupSize}`;

/**
 * A DuckDB-backed Parquet writer. Rows go through newline-delimited JSON into DuckDB's JSON
 * reader with the dataset's explicit column types (so a uint256 string is never re-typed as a
 * number), are sorted in chain order, and are written with COPY.
 */
export async function createParquetWriter(): Promise<ParquetWriter> {
	const instance = await DuckDBInstance.create(":memory:", { threads: "2" });
	const conn: DuckDBConnection = await instance.connect();
	/**
	 * Writes index rows `rows` (a SELECT of our own text) sorted at `path`: whole into a temporary
	 * file, then, when it has more rows than one part holds, split by key range into its parts
	 * (each COPY reads only its key range's row groups of the sorted whole) and the whole removed;
	 * an index in small row groups (small-groups.ts) is always written again from the whole.
	 * Every file goes in place by rename after an fsync: a crash leaves temporary files or unlisted
	 * parts, which the next writer's start removes; a failed write (a full disk) removes its own
	 * (util/temp-files.ts), parts already renamed too (no manifest lists them).
	 */
	const writeIndex = async (
		index: IndexName,
		rows: string,
		path: string,
		written: "parquet.merge.tmp-written" | "parquet.derive.tmp-written",
	): Promise<IndexWrite> => {
		await mkdirDurably(dirname(path));
		const whole = `${path}.whole.tmp`;
		const made = [whole];
		return removingOnFailure(made, async () => {
			const copied = await conn.runAndReadAll(
				`COPY (${rows} ORDER BY ${orderOf(index)}) TO ${quote(whole)} (${indexCopyOptions(index)})`,
			);
			const count = Number(copied.getRows()[0]?.[0] ?? 0);
			await fsyncFile(whole);
			crashPoint(written);
			const def: IndexDef = INDEXES[index];
			const parts = partsFor(count, def.rowGroupSize, def.partRowGroups);
			if (parts === 1 && !def.smallGroups) {
				await rename(whole, path);
			} else {
				for (let i = 0; i < parts; i++) {
					const part = partPath(path, i);
					made.push(`${part}.tmp`, part);
					const where = parts === 1 ? "true" : partCondition(def.key, i, parts);
					const select = `SELECT * FROM read_parquet(${quote(whole)}) WHERE ${where} ORDER BY ${orderOf(index)}`;
					if (def.smallGroups) await writeSmallGroups(conn, select, part, def.rowGroupSize);
					else {
						await conn.run(`COPY (${select}) TO ${quote(`${part}.tmp`)} (${indexCopyOptions(index)})`);
						await fsyncFile(`${part}.tmp`);
						await rename(`${part}.tmp`, part);
					}
				}
				await rm(whole, { force: true });
			}
			await fsyncDir(dirname(path));
			return { rows: count, parts };
		});
	};
	const writer: ParquetWriter = {
		write(dataset, rows, path, stagingDir) {
			const schema: Record<string, readonly [string, string]> = SCHEMAS[dataset];
			const columns = Object.fromEntries(Object.entries(schema).map(([name, [type]]) => [name, type]));
			return writer.writeRows(columns, orderOf(dataset), rows, path, stagingDir);
		},
		async writeRows(columns, order, rows, path, stagingDir) {
			const typed = Object.entries(columns).map(([c, type]) => `${quote(c)}: ${quote(type)}`);
			const names = Object.keys(columns)
				.map((n) => `"${n}"`)
				.join(", ");
			await mkdir(stagingDir, { recursive: true });
			await mkdirDurably(dirname(path));
			const staged = join(stagingDir, `${basename(path)}.ndjson`);
			const tmp = `${path}.tmp`;
			return removingOnFailure([staged, tmp], async () => {
				await writeNdjson(staged, rows);
				await conn.run(
					`COPY (SELECT ${names} FROM read_json(${quote(staged)}, format = 'newline_delimited', maximum_object_size = 1073741824, columns = {${typed.join(", ")}}) ORDER BY ${order})
				 TO ${quote(tmp)} (${parquetCopyOptions(rows.length)})`,
				);
				await fsyncFile(tmp);
				crashPoint("parquet.write.tmp-written");
				await rename(tmp, path);
				await fsyncDir(dirname(path));
				crashPoint("parquet.write.renamed");
				await rm(staged, { force: true });
				return rows.length;
			});
		},
		async select(sql) {
			return (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
		},
		async merge(dataset, files, path, where = "true") {
			const source = `read_parquet([${files.map(quote).join(", ")}])`;
			const counted = await conn.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM ${source} WHERE ${where}`);
			const n = Number(counted.getRowObjectsJS()[0]?.n ?? 0);
			await mkdirDurably(dirname(path));
			const tmp = `${path}.tmp`;
			return removingOnFailure([tmp], async () => {
				await conn.run(
					`COPY (SELECT * FROM ${source} WHERE ${where} ORDER BY ${orderOf(dataset)}) TO ${quote(tmp)} (${parquetCopyOptions(n)})`,
				);
				await fsyncFile(tmp);
				crashPoint("parquet.merge.tmp-written");
				await rename(tmp, path);
				await fsyncDir(dirname(path));
				return n;
			});
		},
		async mergeIndex(index, files, path) {
			const source = `read_parquet([${files.map(quote).join(", ")}])`;
			const def: IndexDef = INDEXES[index];
			return writeIndex(
				index,
				def.merge ? def.merge(source) : `SELECT * FROM ${source}`,
				path,
				"parquet.merge.tmp-written",
			);
		},
		async countDistinct(path, column) {
			const read = await conn.runAndReadAll(
				`SELECT count(DISTINCT "${column.replace(/[^a-z_]/g, "")}")::BIGINT AS n FROM read_parquet(${quote(path)})`,
			);
			return Number(read.getRowObjectsJS()[0]?.n ?? 0);
		},
		async *streamColumn(path, column) {
			const result = await conn.stream(
				`SELECT DISTINCT "${column.replace(/[^a-z_]/g, "")}" FROM read_parquet(${quote(path)})`,
			);
			for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk()) {
				yield (chunk.getColumns()[0] ?? []).map(String);
			}
		},
		async blockHashes(files) {
			if (files.length === 0) return [];
			const read = await conn.runAndReadAll(
				`SELECT hash FROM read_parquet([${files.map(quote).join(", ")}]) ORDER BY number, hash`,
			);
			return read.getRowObjectsJS().map((r) => String(r.hash));
		},
		async derive(index, fileOf, path) {
			return writeIndex(index, indexRowsSql(index, fileOf), path, "parquet.derive.tmp-written");
		},
		async copy(query, path, options) {
			await mkdirDurably(dirname(path));
			const tmp = `${path}.tmp`;
			return removingOnFailure([tmp], async () => {
				const copied = await conn.runAndReadAll(`COPY (${query}) TO ${quote(tmp)} (${options})`);
				await fsyncFile(tmp);
				await rename(tmp, path);
				await fsyncDir(dirname(path));
				return Number(copied.getRows()[0]?.[0] ?? 0);
			});
		},
		close() {
			conn.closeSync();
			instance.closeSync();
		},
	};
	return writer;
}

/** Streams rows as NDJSON: a mainnet chunk's text can pass V8's largest string (~512 MiB). */
async function writeNdjson(path: string, rows: readonly object[]): Promise<void> {
	const out = createWriteStream(path);
	for (const row of rows) {
		if (!out.write(`${JSON.stringify(row)}\n`)) await once(out, "drain");
	}
	out.end();
	await once(out, "finish");
}
