import { createHash } from "node:crypto";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import type { DatasetName, DatasetRows } from "../../extract/rows.js";
import { crashPoint } from "../../util/crash-point.js";
import { fsyncDir, fsyncFile, mkdirDurably } from "../../util/fsync.js";
import { sqlString as quote } from "../../util/sql-string.js";
import { removingOnFailure, writeFileDurably } from "../../util/temp-files.js";
import { INDEXES, type IndexDef, type IndexName } from "../format/indexes.js";
import {
	cutsFor,
	equalPartOf,
	isSlice,
	meetsPart,
	ownPartRows,
	type PartLayout,
	type PartSplit,
	partCondition,
	partNumberSql,
	partPath,
	partsFor,
	SLICE_ROW_GROUP_SIZE,
	slicedOver,
	sliceRows,
} from "../format/key-parts.js";
import { stagingDir } from "../format/layout.js";
import { SCHEMAS, SORT_KEY } from "../format/schema.js";
import { writeLookupDb } from "./lookup-db-writer.js";
import { regroup, stageRows, writeSmallGroups } from "./small-groups.js";

/* The Parquet writer (files/): every store file written, merged and derived through one DuckDB, atomically and durably. */

/**
 * Parquet settings, and why:
 * - ROW_GROUP_SIZE: row groups are the unit DuckDB skips with min/max statistics and bloom
 *   filters; 64k rows keeps a point lookup's read small while the per-group metadata stays
 *   negligible (the blocks' wide rows in smaller groups: DATASET_ROW_GROUP_SIZES).
 * - Dictionaries where DuckDB finds them worth it (its default limits): repeating columns (a
 *   transfer's contract, its transaction's hash, a block's hash) are dictionary-encoded and get
 *   bloom filters (DuckDB writes them for dictionary-encoded
 *   chunks only); all-distinct ones (a transaction's hash, r and s, a transfer's sender and value)
 *   are plain. Until issue 26 every column was forced into a dictionary, for a bloom filter each:
 *   21% of the transactions' bytes and 13% of the transfers' on M (BENCHMARKS.md), for lookups
 *   the index files answer now (a transaction or a block by hash, a wallet's rows), while reads of
 *   the datasets go by block, which min/max statistics prune.
 * - PARQUET_VERSION V2: DuckDB's newer page format and encodings (delta-encoded integers and
 *   string lengths): 3-5% fewer bytes than V1 for the same write time on M (BENCHMARKS.md); DuckDB,
 *   hyparquet and ClickHouse (chdb) read them (test/synth, test/engines).
 * - zstd: the best size for hex-heavy data at a modest CPU cost (levels 6 and 9 saved under 3%
 *   for 1.9-2.7x the write time, BENCHMARKS.md).
 */
export const PARQUET_OPTIONS = {
	ROW_GROUP_SIZE: 65_536,
	BLOOM_FILTER_FALSE_POSITIVE_RATIO: 0.01,
	COMPRESSION: "zstd",
	PARQUET_VERSION: "V2",
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
		options?: string,
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
	 * The same for files whose rows are already in order one after the other (adjacent chunks' files,
	 * in chain order), without sorting them again: the same file a merge writes.
	 */
	concat(dataset: DatasetName, files: string[], path: string): Promise<number>;
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
	/**
	 * The same for part `part` of index `index` split as `layout`, written as writeParts writes it:
	 * in small groups (small-groups.ts) where the kind or the part (a busy key's slice) has them,
	 * else by COPY with indexCopyOptions. (A rewrite that keeps the rows, e.g. upgrade-types.ts.)
	 */
	copyIndexPart(index: IndexName, query: string, path: string, part: number, layout: PartLayout): Promise<number>;
	/**
	 * The same, into `parts` equal-width key-range parts of column `key` at `path` (key-parts.ts), each
	 * sorted by `order`: the rows go once into staging files by part, which each part then sorts
	 * (rather than every part scanning the whole query). Returns the row count.
	 */
	copyParts(query: string, key: string, parts: number, order: string, path: string, options: string): Promise<number>;
	/**
	 * Copies the rows of index `files` (every part of a run) into a DuckDB database at `path`, with
	 * an index on `key` (lookup-db-writer.ts), atomically; returns the row count.
	 */
	lookupDb(files: readonly string[], key: string, path: string): Promise<number>;
	close(): void;
}

/** What an index file's write made: its rows, and the key-range parts they went into (key-parts.ts). */
export interface IndexWrite extends PartSplit {
	rows: number;
}

/** ORDER BY of a dataset's or an index's files. */
export const orderOf = (name: DatasetName | IndexName): string =>
	name in INDEXES ? INDEXES[name as IndexName].sortKey : `"${SORT_KEY[name as DatasetName]}"`;

/** Blocks (after, upTo] of a chunk (null: open); our own integers, from a file's statistics. */
export type BlockPiece = readonly [after: number | null, upTo: number | null];

/** What derive reads of its source file's footer: its rows, and its pieces (blocks cut every PIECE_ROW_GROUPS groups). */
interface SourceFacts {
	rows: number;
	pieces: BlockPiece[];
	/** An empty file's SHA-256 (derive copies the indexes of empty sources of the same bytes). */
	emptyDigest?: string;
}

/**
 * The rows of index `index` for one chunk, from its source dataset's file; of the blocks of
 * `piece` only, when given (every dataset file read is cut to them).
 */
export const indexRowsSql = (index: IndexName, fileOf: (d: DatasetName) => string, piece?: BlockPiece): string => {
	const rel = (d: DatasetName) => {
		const file = `read_parquet(${quote(fileOf(d))})`;
		if (!piece) return file;
		const block = d === "blocks" ? `"number"` : `"block_number"`;
		const [after, upTo] = piece;
		// (No block number, never written: in the first piece, so no row is left out.)
		const cut = [
			after === null ? null : `${block} > ${after}`,
			upTo === null ? null : after === null ? `(${block} <= ${upTo} OR ${block} IS NULL)` : `${block} <= ${upTo}`,
		];
		return `(SELECT * FROM ${file} WHERE ${cut.filter((c) => c !== null).join(" AND ") || "true"})`;
	};
	return INDEXES[index].select(rel(INDEXES[index].source), rel);
};

/**
 * Source row groups (of 65,536 rows) a derive reads at once, when its index has no merge of its
 * own. Such an index's rows over blocks A and B are its rows over A and those over B (its runs
 * merge by putting rows together), so a chunk's can be made block range by block range: a
 * transaction_records derive of M's chunk 10 at once (1.1M transactions, their 3.3M logs
 * grouped into lists) ran a 3 GB DuckDB out of memory.
 */
const PIECE_ROW_GROUPS = 8;

/**
 * Row groups of the staging files a derive splits its rows into: each part's file holds a row
 * group in memory until it is full, so in DuckDB's own groups (122,880 rows) a derive of 128
 * parts held every row (a synth M chunk's 10.8M transfers_by_address rows ran 3 GB out).
 */
const STAGING_ROW_GROUP_SIZE = 8_192;

/**
 * The staging files' codec: they are written once and read once, then removed, so their bytes
 * matter less than the CPU. LZ4 instead of zstd: a chunk's 1.6M `wallet_transfers` rows staged and
 * then written as parts in 0.78 of the CPU time, for twice the temporary bytes (BENCHMARKS.md
 * "sixteenth figures"); the parts themselves are written as before, and are the same bytes.
 */
const STAGING_COMPRESSION = "lz4_raw";

/** The chain's staging folder (layout.ts) of a store file at `<data>/<chain>/<table>/<file>`. */
const stagingDirOf = (path: string): string =>
	stagingDir(dirname(dirname(dirname(path))), basename(dirname(dirname(path))));

/**
 * Row groups of a dataset where not PARQUET_OPTIONS'. A block is a wide row (six 32-byte hashes,
 * its bloom), read by number: a block range, a block by number, the latest block, the stamps of
 * wallet records (query/store/block-stamps.ts) each decode every row of the groups they touch,
 * which in groups of 65,536 were up to 65,536 blocks for one. In groups of 4,096 the same bytes
 * (one of M's 10,000-block files: 2,104,045 → 2,093,590), and on M a block by number read in a
 * quarter of the time, 100 blocks in 0.29-0.68 of it, the latest block in half (BENCHMARKS.md,
 * eleventh figures); more where a merged chunk fills whole groups of 65,536.
 */
export const DATASET_ROW_GROUP_SIZES: Partial<Record<DatasetName, number>> = { blocks: 4_096 };

/** The COPY options of a dataset file (PARQUET_OPTIONS, DATASET_ROW_GROUP_SIZES). */
export function parquetCopyOptions(dataset?: DatasetName): string {
	const options = { ...PARQUET_OPTIONS, ROW_GROUP_SIZE: rowGroupSizeOf(dataset) };
	const fixed = Object.entries(options).map(([k, v]) => `${k} ${typeof v === "string" ? quote(v) : v}`);
	return `FORMAT parquet, ${fixed.join(", ")}`;
}

/** Rows a row group of `dataset`'s files holds at most (any other table: PARQUET_OPTIONS'). */
export const rowGroupSizeOf = (dataset?: DatasetName): number =>
	(dataset && DATASET_ROW_GROUP_SIZES[dataset]) || PARQUET_OPTIONS.ROW_GROUP_SIZE;

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
 * How part `i` of index `index` (split as `layout`) is written by the small-groups writer: its
 * row groups and whether it is dictionary-encoded (a busy key's slice, key-parts.ts sliceRows);
 * null where DuckDB's COPY writes it.
 */
function smallGroupsOf(index: IndexName, i: number, layout: PartLayout): { size: number; dictionary: boolean } | null {
	const def: IndexDef = INDEXES[index];
	const slice = def.slices === true && isSlice(i, layout);
	if (slice) return { size: SLICE_ROW_GROUP_SIZE, dictionary: true };
	return def.smallGroups ? { size: def.rowGroupSize, dictionary: false } : null;
}

const WRITER_THREADS = 2;
/**
 * How many index rows a source row may make, at most, for derive's one-part try: a transfer is two
 * wallets' rows; the try is checked by its count, so a guess too low costs a second write, never a wrong file.
 */
const SMALL_SOURCE_FACTOR = 4;

/** DuckDB settings of a writer (default: DuckDB's, 80% of the memory and `.tmp` under the working folder). */
export interface WriterSettings {
	/** DuckDB's memory_limit (e.g. "3GB"): past it, sorts and temporary tables spill to `tempDirectory`. */
	memoryLimit?: string;
	tempDirectory?: string;
}

/**
 * A DuckDB-backed Parquet writer. Rows go through newline-delimited JSON into DuckDB's JSON
 * reader with the dataset's explicit column types (so a uint256 string is never re-typed as a
 * number), are sorted in chain order, and are written with COPY.
 */
export async function createParquetWriter(settings: WriterSettings = {}): Promise<ParquetWriter> {
	const instance = await DuckDBInstance.create(":memory:", {
		threads: String(WRITER_THREADS),
		...(settings.memoryLimit ? { memory_limit: settings.memoryLimit } : {}),
		...(settings.tempDirectory ? { temp_directory: settings.tempDirectory } : {}),
	});
	const conn: DuckDBConnection = await instance.connect();
	/**
	 * Stages the rows of `query` into folder `staged`, a folder per equal-width part of column `key`
	 * (`_part=<i>`, partNumberSql), its files named by `pattern` (DuckDB's FILENAME_PATTERN) if given.
	 */
	const stageByPart = (query: string, key: string, parts: number, staged: string, pattern?: string) =>
		conn.run(
			`COPY (SELECT *, ${partNumberSql(key, parts)} AS _part FROM (${query})) TO ${quote(staged)} (FORMAT parquet, COMPRESSION ${quote(STAGING_COMPRESSION)}, ROW_GROUP_SIZE ${STAGING_ROW_GROUP_SIZE}, PARTITION_BY (_part), ${pattern ? `FILENAME_PATTERN ${quote(pattern)}, ` : ""}OVERWRITE_OR_IGNORE true)`,
		);
	/** The rows stageByPart put in part `i` of `staged` (a folder present: readdir). */
	const stagedPart = (staged: string, i: number) =>
		`SELECT * FROM read_parquet(${quote(join(staged, `_part=${i}`, "*.parquet"))}, hive_partitioning = false)`;
	/**
	 * Writes index `index`'s rows sorted at `path`, in key-range parts when there are more rows than
	 * one part holds. `rows` counts them; `partRows(i, parts)` gives part i's rows (a SELECT of our
	 * own text, unsorted), read by each part's COPY, which sorts only its own key range: sorting
	 * every row at once into a temporary whole and reading each part back from it (as before) ran
	 * DuckDB out of 3 GB on a synth M chunk (2.3M rows, whose sort it does not spill), and wrote and
	 * read the whole once more (issue 26). An index in small row groups (small-groups.ts) is
	 * written by that writer, part by part.
	 * Every file goes in place by rename after an fsync: a crash leaves temporary files or unlisted
	 * parts, which the next writer's start removes; a failed write (a full disk) removes its own
	 * (util/temp-files.ts), parts already renamed too (no manifest lists them).
	 */
	const writeParts = async (
		index: IndexName,
		/** The rows the layout counted, which the parts must hold; undefined: not counted (derive's one-part try). */
		count: number | undefined,
		layout: PartSplit,
		partRows: (i: number) => string,
		path: string,
		written: "parquet.merge.tmp-written" | "parquet.derive.tmp-written",
	): Promise<IndexWrite> => {
		await mkdirDurably(dirname(path));
		const def: IndexDef = INDEXES[index];
		const { parts, cuts } = layout;
		const made: string[] = [];
		const small = (i: number) => smallGroupsOf(index, i, layout) !== null;
		const selectOf = (i: number) => `${partRows(i)} ORDER BY ${orderOf(index)}`;
		// The next small-groups part, staged by DuckDB's threads while this one is regrouped.
		let next: Promise<number> | undefined;
		const stage = (i: number) => {
			made.push(`${partPath(path, i)}.tmp`, partPath(path, i));
			return stageRows(conn, selectOf(i), partPath(path, i));
		};
		// The rows written, as DuckDB's COPY counts them (derive's one-part try reads its count here).
		let wrote = 0;
		return removingOnFailure(made, async () => {
			try {
				for (let i = 0; i < parts; i++) {
					const part = partPath(path, i);
					const groups = smallGroupsOf(index, i, layout);
					if (groups) {
						wrote += await (next ?? stage(i));
						next = i + 1 < parts && small(i + 1) ? stage(i + 1) : undefined;
						if (i === 0) crashPoint(written);
						await regroup(part, groups.size, groups.dictionary);
						continue;
					}
					made.push(`${part}.tmp`, part);
					const copy = `COPY (${selectOf(i)}) TO ${quote(`${part}.tmp`)} (${indexCopyOptions(index)})`;
					const copied = await countOf(copy);
					wrote += copied;
					// DuckDB's parallel COPY writes a file of between one and two row groups' rows (2,049 to
					// 4,095 at 2,048; DuckDB 1.5) as one oversized group; with one thread it cuts it. The
					// footer says so (no scan of the part's rows), and only such a part is written again;
					// a part of a group's rows or fewer (most of a small chunk's) cannot have one.
					const largest = `SELECT max(row_group_num_rows) FROM parquet_metadata(${quote(`${part}.tmp`)})`;
					if (copied > def.rowGroupSize && (await countOf(largest)) > def.rowGroupSize) {
						await conn.run("SET threads = 1");
						try {
							await conn.run(copy);
						} finally {
							await conn.run(`SET threads = ${WRITER_THREADS}`);
						}
					}
					await fsyncFile(`${part}.tmp`);
					if (i === 0) crashPoint(written);
					await rename(`${part}.tmp`, part);
				}
			} catch (err) {
				// A part staged ahead is still being written: settled before its files are removed.
				await next?.catch(() => {});
				throw err;
			}
			await fsyncDir(dirname(path));
			if (count !== undefined && wrote !== count) throw new Error(`${path}: wrote ${wrote} rows of ${count} counted`);
			return { rows: wrote, parts, cuts };
		});
	};
	/**
	 * The key-range parts to write index `index`'s rows (`rows`, a SELECT of our own text) in:
	 * equal-width parts for the rows of quiet keys, and a part of its own for each key with more
	 * than ownPartRows (key-parts.ts), found by one aggregate over the key, which also counts the
	 * rows where `known` does not (an index its merge sums: one pass of that sum, not two). Hashes
	 * name one row each.
	 */
	const layoutOf = async (index: IndexName, rows: string, known?: number) => {
		const def: IndexDef = INDEXES[index];
		const most = ownPartRows(def.rowGroupSize, def.partRowGroups);
		let count = known;
		let busy: string[] = [];
		// The busy keys with more rows than slicedOver, where the kind slices them (key-parts.ts).
		let sliced: string[] = [];
		let busyRows = 0;
		if (def.key !== "hash" && (known === undefined || known > most)) {
			const busyOnly = `FILTER (WHERE k IS NOT NULL AND n > ${most})`;
			const over = def.slices ? slicedOver(def.rowGroupSize, def.partRowGroups) : Number.MAX_SAFE_INTEGER;
			const [r] = (
				await conn.runAndReadAll(
					`WITH c AS (SELECT "${def.key}" AS k, count(*) AS n FROM (${rows}) GROUP BY 1)
					 SELECT sum(n)::BIGINT AS total, list(k ORDER BY k) ${busyOnly} AS busy, (sum(n) ${busyOnly})::BIGINT AS busy_rows,
					        list(k) FILTER (WHERE k IS NOT NULL AND n > ${over}) AS sliced FROM c`,
				)
			).getRowObjectsJS();
			count = Number(r?.total ?? 0);
			busy = ((r?.busy ?? []) as unknown[]).map(String);
			sliced = ((r?.sliced ?? []) as unknown[]).map(String);
			busyRows = Number(r?.busy_rows ?? 0);
		} else count ??= await countOf(`SELECT count(*)::BIGINT FROM (${rows})`);
		const equal = partsFor(count - busyRows, def.rowGroupSize, def.partRowGroups);
		const cuts = cutsFor(busy, equal, await slicesOf(rows, def, sliced));
		return { count, parts: equal + cuts.length, cuts };
	};
	/**
	 * Where `keys` (busy keys with more rows than slicedOver) are cut into slices (key-parts.ts
	 * sliceCut): the block of every slice-th of their rows in block order, so that each slice holds
	 * about sliceRows (more where one block holds many). One pass over their rows, only when
	 * there are such keys. writeParts writes each slice in small row groups.
	 */
	const slicesOf = async (rows: string, def: IndexDef, keys: readonly string[]) => {
		const slices = new Map<string, number[]>();
		if (keys.length === 0) return slices;
		const step = sliceRows(def.rowGroupSize, def.partRowGroups);
		const read = await conn.runAndReadAll(
			`WITH b AS (SELECT unnest([${keys.map(quote).join(", ")}]::VARCHAR[]) AS k),
			      r AS (SELECT "${def.key}" AS k, block_number AS n,
			                   row_number() OVER (PARTITION BY "${def.key}" ORDER BY block_number) - 1 AS j,
			                   min(block_number) OVER (PARTITION BY "${def.key}") AS first
			            FROM (${rows}) WHERE "${def.key}" IN (SELECT k FROM b))
			 SELECT k, list(DISTINCT n ORDER BY n) AS cuts FROM r WHERE j > 0 AND j % ${step} = 0 AND n > first GROUP BY k`,
		);
		for (const r of read.getRowObjectsJS()) slices.set(String(r.k), (r.cuts as unknown[]).map(Number));
		return slices;
	};
	const countOf = async (sql: string) => Number((await conn.runAndReadAll(sql)).getRows()[0]?.[0] ?? 0);
	/**
	 * Each file's least and greatest `key` by its footer's statistics, and whether it has NULL keys
	 * (part 0's: partCondition); null: a group without statistics.
	 */
	const keyRanges = async (files: string[], key: string) => {
		const read = await conn.runAndReadAll(
			`SELECT file_name AS f, min(stats_min_value) AS lo, max(stats_max_value) AS hi,
			        bool_or(stats_min_value IS NULL OR stats_max_value IS NULL) AS missing, bool_or(stats_null_count > 0) AS nulls
			 FROM parquet_metadata([${files.map(quote).join(", ")}]) WHERE path_in_schema = ${quote(key)} GROUP BY 1`,
		);
		return new Map(
			read
				.getRowObjectsJS()
				.map(
					(r) =>
						[
							String(r.f),
							r.missing ? null : { min: String(r.lo), max: String(r.hi), nulls: r.nulls === true },
						] as const,
				),
		);
	};
	/**
	 * A dataset file's rows, and its blocks cut every PIECE_ROW_GROUPS row groups, by its block
	 * column's statistics.
	 */
	const sourceFacts = async (file: string, dataset: DatasetName): Promise<SourceFacts> => {
		// Read once a file (a chunk derives up to 18 indexes from 5 files); a path written again (a
		// reorg's chunk) is another inode, so another entry.
		const { ino, size, mtimeMs } = await stat(file);
		const key = `${file}\0${ino}\0${size}\0${mtimeMs}`;
		let facts = factsOf.get(key);
		if (!facts) {
			facts = readSourceFacts(file, dataset);
			factsOf.set(key, facts);
			facts.catch(() => factsOf.delete(key));
			// At most 32 kept: the oldest goes (a Map keeps insertion order).
			const [oldest] = factsOf.keys();
			if (factsOf.size > 32 && oldest !== undefined) factsOf.delete(oldest);
		}
		return facts;
	};
	const factsOf = new Map<string, Promise<SourceFacts>>();
	/** An index's file from an empty source, by kind and the source's bytes (derive). */
	const emptyIndexes = new Map<string, Buffer>();
	const readSourceFacts = async (file: string, dataset: DatasetName): Promise<SourceFacts> => {
		const column = dataset === "blocks" ? "number" : "block_number";
		const read = await conn.runAndReadAll(
			`SELECT stats_max, row_group_num_rows FROM parquet_metadata(${quote(file)}) WHERE path_in_schema = '${column}' ORDER BY row_group_id`,
		);
		const maxes = read.getRows().map((r) => Number(r[0]));
		const rows = read.getRows().reduce((n, r) => n + Number(r[1]), 0);
		const cuts = [
			...new Set(
				maxes.filter((m, g) => (g + 1) % PIECE_ROW_GROUPS === 0 && g + 1 < maxes.length && Number.isSafeInteger(m)),
			),
		].sort((a, b) => a - b);
		const pieces = [null, ...cuts].map((after, k) => [after, cuts[k] ?? null] as const);
		if (rows > 0) return { rows, pieces };
		return {
			rows,
			pieces,
			emptyDigest: createHash("sha256")
				.update(await readFile(file))
				.digest("hex"),
		};
	};
	const writer: ParquetWriter = {
		write(dataset, rows, path, stagingDir) {
			const schema: Record<string, readonly [string, string]> = SCHEMAS[dataset];
			const columns = Object.fromEntries(Object.entries(schema).map(([name, [type]]) => [name, type]));
			return writer.writeRows(columns, orderOf(dataset), rows, path, stagingDir, parquetCopyOptions(dataset));
		},
		async writeRows(columns, order, rows, path, stagingDir, options = parquetCopyOptions()) {
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
				 TO ${quote(tmp)} (${options})`,
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
			await mkdirDurably(dirname(path));
			const tmp = `${path}.tmp`;
			return removingOnFailure([tmp], async () => {
				// (COPY answers the rows it wrote: no count of the inputs first.)
				const n = await countOf(
					`COPY (SELECT * FROM ${source} WHERE ${where} ORDER BY ${orderOf(dataset)}) TO ${quote(tmp)} (${parquetCopyOptions(dataset)})`,
				);
				await fsyncFile(tmp);
				crashPoint("parquet.merge.tmp-written");
				await rename(tmp, path);
				await fsyncDir(dirname(path));
				return n;
			});
		},
		async concat(dataset, files, path) {
			await mkdirDurably(dirname(path));
			const tmp = `${path}.tmp`;
			return removingOnFailure([tmp], async () => {
				// No sort (a merged chunk's 8M rows at once would not fit in a bounded DuckDB): the
				// files are read in order through a temporary table (spilled when it must) by one
				// thread, so COPY cuts row groups of 65,536 rows, as a sorted COPY does; from the files
				// themselves it cuts where each file's last row group ends.
				let n = 0;
				await conn.run("SET threads = 1");
				try {
					await conn.run(
						`CREATE OR REPLACE TEMP TABLE concat_rows AS SELECT * FROM read_parquet([${files.map(quote).join(", ")}])`,
					);
					n = await countOf(`COPY (SELECT * FROM concat_rows) TO ${quote(tmp)} (${parquetCopyOptions(dataset)})`);
				} finally {
					await conn.run("DROP TABLE IF EXISTS concat_rows");
					await conn.run(`SET threads = ${WRITER_THREADS}`);
				}
				await fsyncFile(tmp);
				crashPoint("parquet.merge.tmp-written");
				await rename(tmp, path);
				await fsyncDir(dirname(path));
				return n;
			});
		},
		async mergeIndex(index, files, path) {
			// Index files are sorted by their key, so each part reads, of the files whose keys (by
			// their statistics) can be in its range, only the row groups their statistics leave.
			const def: IndexDef = INDEXES[index];
			const rowsOf = (from: string[], where: string) => {
				const source = `(SELECT * FROM read_parquet([${from.map(quote).join(", ")}]) WHERE ${where})`;
				return def.merge ? def.merge(source) : `SELECT * FROM ${source}`;
			};
			// A merge that sums (def.merge) is counted by layoutOf's pass; the others by their footers.
			const known = def.merge
				? undefined
				: await countOf(`SELECT sum(num_rows)::BIGINT FROM parquet_file_metadata([${files.map(quote).join(", ")}])`);
			const { count, ...layout } = await layoutOf(index, rowsOf(files, "true"), known);
			if (layout.parts === 1)
				return writeParts(index, count, layout, () => rowsOf(files, "true"), path, "parquet.merge.tmp-written");
			const ranges = await keyRanges(files, def.key);
			const meeting = (i: number) => {
				const from = files.filter((f) => {
					const r = ranges.get(f);
					// No statistics: read (and filtered by the condition); no row groups: nothing to read.
					return r === null || (r !== undefined && (meetsPart(r.min, r.max, i, layout) || (i === 0 && r.nulls)));
				});
				// A part no input meets (beside a busy key's own) is still written, empty: from any one of them.
				return from.length > 0 ? from : files.slice(0, 1);
			};
			return writeParts(
				index,
				count,
				layout,
				(i) => rowsOf(meeting(i), partCondition(def.key, i, layout)),
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
			const def: IndexDef = INDEXES[index];
			const source = await sourceFacts(fileOf(def.source), def.source);
			const rows = indexRowsSql(index, fileOf);
			// A small chunk's index (every chunk of a follower at the head, of a test's chain): one part
			// at once, counted by its COPY, instead of counting (or summing) its rows first. It is the
			// file layoutOf would make if it holds no more than a key may in a shared part (no busy
			// key, one part); else it is written again below.
			const most = ownPartRows(def.rowGroupSize, def.partRowGroups);
			// From an empty source file (most head blocks of a quiet chain have no transfers, no
			// creations): the bytes an index of the kind had from a source of the same bytes, copied,
			// instead of a COPY of no rows (5-8 ms of DuckDB's fixed cost each). An index is a function
			// of its source's bytes alone (one source: not the native balances'), so these are the
			// bytes the COPY would write.
			const empty =
				source.emptyDigest !== undefined && def.also === undefined ? `${index}\0${source.emptyDigest}` : undefined;
			const copied = empty === undefined ? undefined : emptyIndexes.get(empty);
			if (copied) {
				// Written as a part is (writeParts): removed again, renamed or not, if the write fails.
				await mkdirDurably(dirname(path));
				await removingOnFailure([path], () =>
					writeFileDurably(path, copied, () => crashPoint("parquet.derive.tmp-written")),
				);
				return { rows: 0, parts: 1, cuts: [] };
			}
			if (source.rows * SMALL_SOURCE_FACTOR <= most) {
				const one = await writeParts(
					index,
					undefined,
					{ parts: 1, cuts: [] },
					() => rows,
					path,
					"parquet.derive.tmp-written",
				);
				if (empty !== undefined && one.rows === 0) {
					emptyIndexes.set(empty, await readFile(path));
					// At most 64 kept (a kind and a dataset's empty file each, in practice): the oldest goes.
					const [oldest] = emptyIndexes.keys();
					if (emptyIndexes.size > 64 && oldest !== undefined) emptyIndexes.delete(oldest);
				}
				if (one.rows <= most) return one;
			}
			const pieces = def.merge ? [undefined] : source.pieces;
			// Counted piece by piece, but for an index its merge sums (one piece: layoutOf counts it).
			let known: number | undefined;
			if (!def.merge) {
				known = 0;
				for (const piece of pieces)
					known += await countOf(`SELECT count(*)::BIGINT FROM (${indexRowsSql(index, fileOf, piece)})`);
			}
			const { count, ...layout } = await layoutOf(index, rows, known);
			if (layout.parts === 1) return writeParts(index, count, layout, () => rows, path, "parquet.derive.tmp-written");
			// The source is in chain order: its rows go once, piece by piece, into staging files by
			// equal-width part, which each part then sorts (rather than every part scanning the whole
			// source); a busy key's part, and the parts beside it, read their equal-width part's rows.
			// (Staged by the exact part, the cuts' comparisons took 11 of a chunk's 71 s: M's
			// wallet_transfers of blocks 90,000-99,999, 48 cuts.)
			const equal = layout.parts - layout.cuts.length;
			const staged = join(stagingDirOf(path), `${basename(path)}.parts`);
			try {
				await rm(staged, { recursive: true, force: true });
				await mkdir(dirname(staged), { recursive: true });
				for (const [j, piece] of pieces.entries()) {
					await stageByPart(indexRowsSql(index, fileOf, piece), def.key, equal, staged, `piece${j}_{i}`);
				}
				const present = new Set(await readdir(staged));
				return await writeParts(
					index,
					count,
					layout,
					(i) => {
						const e = equalPartOf(i, layout);
						if (!present.has(`_part=${e}`)) return `SELECT * FROM (${rows}) WHERE false`;
						const from = stagedPart(staged, e);
						return layout.cuts.length > 0 ? `${from} WHERE ${partCondition(def.key, i, layout)}` : from;
					},
					path,
					"parquet.derive.tmp-written",
				);
			} finally {
				await rm(staged, { recursive: true, force: true });
			}
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
		async copyIndexPart(index, query, path, part, layout) {
			const groups = smallGroupsOf(index, part, layout);
			if (!groups) return this.copy(query, path, indexCopyOptions(index));
			await mkdirDurably(dirname(path));
			return removingOnFailure([`${path}.tmp`], async () => {
				const rows = await writeSmallGroups(conn, query, path, groups.size, groups.dictionary);
				await fsyncDir(dirname(path));
				return rows;
			});
		},
		async copyParts(query, key, parts, order, path, options) {
			const staged = join(stagingDirOf(path), `${basename(path)}.parts`);
			await mkdirDurably(dirname(path));
			await rm(staged, { recursive: true, force: true });
			await mkdir(dirname(staged), { recursive: true });
			const made: string[] = [];
			try {
				await stageByPart(query, key, parts, staged);
				const present = new Set(await readdir(staged));
				return await removingOnFailure(made, async () => {
					let rows = 0;
					for (let i = 0; i < parts; i++) {
						const part = partPath(path, i);
						made.push(`${part}.tmp`, part);
						const from = present.has(`_part=${i}`) ? stagedPart(staged, i) : `SELECT * FROM (${query}) WHERE false`;
						const copied = await conn.runAndReadAll(
							`COPY (${from} ORDER BY ${order}) TO ${quote(`${part}.tmp`)} (${options})`,
						);
						rows += Number(copied.getRows()[0]?.[0] ?? 0);
						await fsyncFile(`${part}.tmp`);
						await rename(`${part}.tmp`, part);
					}
					await fsyncDir(dirname(path));
					return rows;
				});
			} finally {
				await rm(staged, { recursive: true, force: true });
			}
		},
		lookupDb(files, key, path) {
			return writeLookupDb(conn, files, key, path);
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
