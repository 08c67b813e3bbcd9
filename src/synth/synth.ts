import { mkdir, rename, rm, rmdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { DATASETS, type DatasetName } from "../extract/rows.js";
import { deriveIndexes } from "../store/chunks/chunk-store.js";
import { deleteNow, mergeAll } from "../store/chunks/merges.js";
import { saveManifest } from "../store/delta/save-manifest.js";
import { createParquetWriter, parquetCopyOptions } from "../store/files/parquet-writer.js";
import { alignedChunks, partitionPath, stagingDir } from "../store/format/layout.js";
import { loadManifest, missingRanges, nextGeneration } from "../store/format/manifest.js";
import type { ChunkEntry } from "../store/format/records.js";
import { ranksStep } from "../store/holdings/holder-ranks.js";
import type { ChainRef } from "../util/chain.js";
import { sqlString as quote } from "../util/sql-string.js";
import { chunkTablesSql, datasetSelectSql, macrosSql } from "./chunk-sql.js";
import type { Scale } from "./scales.js";

/**
 * DuckDB's memory limits of the synth's two DuckDBs. The generator's holds the chunk's two
 * tables and one dataset's rows in a temporary table, which it spills past the limit (nothing of
 * it is sorted: writeFile). The writer's sorts go key-range part by part, its derives block range
 * by block range (parquet-writer.ts); at 3 GB its transaction_records derive of M's chunk 10 at
 * once ran out, so it gets the larger share.
 */
export const SYNTH_MEMORY_LIMIT = { generator: "2.5GB", writer: "4GB" } as const;

export interface SynthOptions {
	scale: Scale;
	chain: ChainRef;
	dataDir: string;
	partitionSize: number;
	/** Rows from which settled chunks are no longer merged (chunk-merges.ts); default COMPACT_ROWS. */
	compactRows?: number;
	/** DuckDB threads (default: all cores). */
	threads?: number;
	onChunk?: (entry: ChunkEntry, done: number, total: number) => void;
}

/**
 * Writes the synthetic chain in the backfill's layout: the same file names, columns, sort order,
 * Parquet options and manifest, so the service, `npm run sql` and the follower read it like
 * backfilled data. Chunks are committed one at a time (files, then the manifest), so an
 * interrupted run resumes where it stopped, like the backfill.
 */
export async function writeSynthChain(o: SynthOptions): Promise<{ chunks: number; rows: Record<string, number> }> {
	// Both DuckDBs bounded (each defaults to 80% of the memory: M's synth peaked at 13.2 GB), spilling past it.
	// A spill folder each: two DuckDBs sharing one overwrite each other's spill files (seen: a
	// "Cannot resize vector" error from one, after the other had spilled).
	const tempDirectory = join(stagingDir(o.dataDir, o.chain.id), "duckdb");
	// DuckDB creates a spill folder's last level only, when it first spills.
	for (const d of ["generator", "writer"]) await mkdir(join(tempDirectory, d), { recursive: true });
	const instance = await DuckDBInstance.create(":memory:", {
		memory_limit: SYNTH_MEMORY_LIMIT.generator,
		temp_directory: join(tempDirectory, "generator"),
		...(o.threads ? { threads: String(o.threads) } : {}),
	});
	const conn = await instance.connect();
	const writer = await createParquetWriter({
		memoryLimit: SYNTH_MEMORY_LIMIT.writer,
		tempDirectory: join(tempDirectory, "writer"),
	});
	const scalar = async (sql: string) => (await conn.runAndReadAll(sql)).getRows()[0]?.[0];
	try {
		await conn.run(macrosSql(o.scale));
		const manifest = await loadManifest(o.dataDir, o.chain.id, o.chain.number);
		manifest.partition_size ??= o.partitionSize;
		if (o.compactRows !== undefined) manifest.compact_rows = o.compactRows;
		const todo = missingRanges(manifest, 0, o.scale.blocks - 1).flatMap(([a, b]) =>
			alignedChunks(a, b, o.partitionSize),
		);
		const totals: Record<string, number> = {};
		let done = 0;
		for (const [from, to] of todo) {
			await conn.run(chunkTablesSql(o.scale, from, to));
			const entry: ChunkEntry = {
				from,
				to,
				traces: "parity",
				datasets: [...DATASETS],
				rows: {},
				first_parent_hash: String(
					await scalar(from === 0 ? `SELECT '0x${"0".repeat(64)}'` : `SELECT block_hash(${from - 1})`),
				),
				last_hash: String(await scalar(`SELECT block_hash(${to})`)),
				gen: nextGeneration(manifest),
			};
			for (const d of DATASETS) {
				const n = await writeFile(d, datasetSelectSql(d), partitionPath(o.dataDir, o.chain.id, d, entry));
				entry.rows[d] = n;
				totals[d] = (totals[d] ?? 0) + n;
			}
			// Index files by the backfill's own code path.
			await deriveIndexes(writer, o.dataDir, o.chain.id, entry);
			manifest.chunks.push(entry);
			await saveManifest(o.dataDir, manifest);
			// Merged index runs and chunks as the backfill makes them; nothing serves a synth folder while it is written.
			await mergeAll(writer, o.dataDir, manifest, deleteNow);
			o.onChunk?.(entry, ++done, todo.length);
		}
		// The holder ranks once, as a backfill's end writes them (store/holdings/holder-ranks.ts).
		await deleteNow((await ranksStep(writer, o.dataDir, manifest)) ?? []);
		return { chunks: manifest.chunks.length, rows: totals };
	} finally {
		writer.close();
		conn.closeSync();
		instance.closeSync();
		// DuckDB's spill files went with it; the folders go too, so the folder is the backfill's.
		await rm(tempDirectory, { recursive: true, force: true });
		await rmdir(dirname(tempDirectory)).catch(() => {});
	}

	/**
	 * Writes `select` (its rows come in the file's order: chunk-sql.ts), then renames. No sort:
	 * DuckDB could not spill its sort of a whole chunk's dataset (chunk 10's 5.4M transfers at M
	 * ran a 5 GB DuckDB out of memory). The rows go through a temporary table, which DuckDB
	 * spills when it must, written by one thread: it cuts row groups where a batch or a
	 * vector ends, so only from a table's full vectors on one thread are they the 65,536 rows
	 * of a sorted COPY (the same bytes as before), on every thread count.
	 */
	async function writeFile(d: DatasetName, select: string, path: string): Promise<number> {
		await mkdir(dirname(path), { recursive: true });
		await conn.run("SET threads = 1");
		try {
			await conn.run(`CREATE OR REPLACE TEMP TABLE s_out AS ${select}`);
			// (COPY answers the rows it wrote.)
			const n = Number(
				await scalar(`COPY (SELECT * FROM s_out) TO ${quote(`${path}.tmp`)} (${parquetCopyOptions(d)})`),
			);
			await rename(`${path}.tmp`, path);
			return n;
		} finally {
			await conn.run("DROP TABLE IF EXISTS s_out");
			await conn.run(o.threads ? `SET threads = ${o.threads}` : "RESET threads");
		}
	}
}
