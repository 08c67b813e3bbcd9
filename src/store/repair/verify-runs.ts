import { relative } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { sqlString as quote } from "../../util/sql-string.js";
import { partPaths } from "../format/key-parts.js";
import { partitionPath } from "../format/layout.js";
import { parquetShape } from "../format/parquet-shape.js";
import type { Manifest, RunEntry } from "../format/records.js";
import { filterPath, loadKeyFilter } from "../indexes/key-filter.js";

/* Checking merged index runs (repair/): each run's file and key filter against the manifest. */

/** A merged index run whose file or key filter is not as the manifest says. */
export interface RunProblem {
	/** Relative to the data folder: safe to show anywhere. */
	file: string;
	run: RunEntry;
	problem: string;
}

/**
 * Checks the merged index runs of a chain (runs.ts): each run file exists, reads, and holds the
 * rows the manifest recorded, and its key filter loads. A damaged run holds nothing the datasets
 * do not, so `npm run reindex` repairs it: it unlists the run and writes the covered chunks'
 * index files again from their datasets, then merges them anew.
 */
export async function checkRuns(dataDir: string, m: Manifest): Promise<RunProblem[]> {
	const runs = m.runs ?? [];
	if (runs.length === 0) return [];
	const problems: RunProblem[] = [];
	const db = await DuckDBInstance.create(":memory:", { threads: "1" });
	const conn = await db.connect();
	try {
		for (const run of runs) {
			const path = partitionPath(dataDir, m.chain, run.index, run);
			const report = (file: string, problem: string) => problems.push({ file: relative(dataDir, file), run, problem });
			// Every key-range part (format/key-parts.ts) whole, their rows together the recorded count.
			let rows = 0;
			let whole = true;
			for (const part of partPaths(path, run.parts)) {
				const shape = await parquetShape(part);
				if (shape) {
					report(part, shape);
					whole = false;
					continue;
				}
				try {
					const r = await conn.runAndReadAll(`SELECT num_rows FROM parquet_file_metadata(${quote(part)})`);
					rows += Number(r.getRowObjectsJS()[0]?.num_rows);
				} catch {
					report(part, "cannot be read as Parquet");
					whole = false;
				}
			}
			if (!whole) continue;
			if (rows !== run.rows) report(path, `holds ${rows} rows where the manifest recorded ${run.rows}`);
			try {
				await loadKeyFilter(filterPath(path));
			} catch (err) {
				const code = (err as NodeJS.ErrnoException).code;
				report(filterPath(path), code === "ENOENT" ? "missing" : "not a whole key filter");
			}
		}
	} finally {
		conn.closeSync();
		db.closeSync();
	}
	return problems;
}

/** The command that repairs damaged runs. */
export const runRepairCommand = (dataDir: string, chain: string): string =>
	`npm run reindex -- --data-dir ${dataDir} --chain ${chain}`;
