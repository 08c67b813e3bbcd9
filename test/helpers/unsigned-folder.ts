import { rename, rm } from "node:fs/promises";
import { DuckDBInstance } from "@duckdb/node-api";
import { DATASETS, type DatasetName } from "../../src/extract/rows.js";
import { saveManifest } from "../../src/store/delta/save-manifest.js";
import { indexCopyOptions, parquetCopyOptions } from "../../src/store/files/parquet-writer.js";
import { INDEXES, type IndexDef, type IndexName } from "../../src/store/format/indexes.js";
import { GHOST_DATASET, loadManifest } from "../../src/store/format/manifest.js";
import { SCHEMAS } from "../../src/store/format/schema.js";
import { listedPaths } from "../../src/store/indexes/listing.js";

const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** A column's expression in a rewrite (null: the column as it is); `kind` is the file's folder (dataset, index, table). */
export type ColumnRewrite = (kind: string, name: string, type: string) => string | null;

/**
 * Rewrites the Parquet files a folder's manifest lists in place (same name, the same rows in the
 * same order, the writer's COPY options for its kind) with each column as `column` says; files
 * with no column to change are left as they are. The runs' lookup databases are unlisted and
 * deleted first: copies of rows this changes, and no writer before them wrote any.
 */
export async function rewriteListed(
	dataDir: string,
	chain: { id: string; number: number },
	column: ColumnRewrite,
): Promise<void> {
	const m = await loadManifest(dataDir, chain.id, chain.number);
	if (m.runs?.some((r) => r.lookup_db)) {
		const dbs = [...listedPaths(dataDir, m)].filter((p) => p.endsWith(".duckdb"));
		for (const r of m.runs) delete r.lookup_db;
		await saveManifest(dataDir, m);
		await Promise.all(dbs.map((p) => rm(p)));
	}
	const db = await DuckDBInstance.create(":memory:", { threads: "2" });
	const conn = await db.connect();
	try {
		for (const path of listedPaths(dataDir, m)) {
			if (!path.endsWith(".parquet")) continue;
			const kind = path.split("/").at(-2) as string;
			const src = `read_parquet(${quote(path)}, file_row_number = true)`;
			const described = (
				await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${quote(path)})`)
			).getRowObjectsJS();
			let changed = false;
			const select = described.map((d) => {
				const [name, type] = [String(d.column_name), String(d.column_type)];
				const expr = column(kind, name, type);
				changed ||= expr != null;
				return expr == null ? `"${name}"` : `${expr} AS "${name}"`;
			});
			if (!changed) continue;
			const options = kind in INDEXES ? indexCopyOptions(kind as IndexName) : parquetCopyOptions();
			await conn.run(
				`COPY (SELECT ${select.join(", ")} FROM ${src} ORDER BY file_row_number) TO ${quote(`${path}.tmp`)} (${options})`,
			);
			await rename(`${path}.tmp`, path);
		}
	} finally {
		conn.closeSync();
		db.closeSync();
	}
}

/** The dataset whose columns a file of `kind` carries (its own, an index's source, ghost blocks'), if any. */
function sourceOf(kind: string): DatasetName | null {
	if (kind === GHOST_DATASET) return "blocks";
	if (kind in INDEXES) {
		const def: IndexDef = INDEXES[kind as IndexName];
		return def.columns ? null : def.source;
	}
	return DATASETS.includes(kind as DatasetName) ? (kind as DatasetName) : null;
}

/**
 * The column types of folders written before the stored integers became signed: every integer
 * column of the datasets (so of their indexes and ghost blocks too) unsigned, lists and structs
 * included, the blocks' nonce UBIGINT, the balance deltas' first_block and last_block and
 * opening_balances' read_at UBIGINT (the deltas' limb sums and counts, and token decimals, were
 * signed already). The by-address records came after signed types; their block_number is made
 * unsigned too, so that the upgrade covers every kind a folder has now. Checked once against a folder written by that code (the same DuckDB types for
 * every file kind of a backfill and of a synthetic chain).
 */
export const OLD_UNSIGNED_TYPES: ColumnRewrite = (kind, name, type) => {
	const source = sourceOf(kind);
	const wasUnsigned =
		source != null
			? name in SCHEMAS[source]
			: (kind in INDEXES && (name === "first_block" || name === "last_block" || name === "block_number")) ||
				(kind === "opening_balances" && name === "read_at");
	if (!wasUnsigned) return null;
	const old =
		source === "blocks" && name === "nonce" ? "UBIGINT" : type.replace(/\b(BIGINT|INTEGER|TINYINT)\b/g, "U$1");
	return old === type ? null : `CAST("${name}" AS ${old})`;
};
