import { existsSync } from "node:fs";
import { join } from "node:path";
import { DATASETS, type DatasetName } from "../extract/rows.js";
import { manifestPath } from "../store/format/layout.js";
import { listedFiles, metadataFiles, readManifestSafe } from "../store/format/manifest.js";
import { type Manifest, METADATA_TABLE_NAMES } from "../store/format/records.js";
import { uint256Columns } from "../store/format/schema.js";
import { sqlString as quote } from "../util/sql-string.js";

/**
 * The numeric forms a view adds next to each uint256 column `c` (stored as exact decimal text,
 * which sorts as text and needs a cast to add up): `c_d38` DECIMAL(38,0), exact, null from 10^38
 * on (DuckDB's widest decimal; 10^20 ether in wei); `c_f64` DOUBLE, every value, about 15
 * significant digits. Computed when read, so the files keep one form (data/README.md).
 */
export function numericForms(dataset: DatasetName): string[] {
	return uint256Columns(dataset).flatMap((c) => [
		// Through HUGEINT: DuckDB's text-to-DECIMAL cast is about 100x slower than text to HUGEINT
		// (ERC-20 sums by contract over M's 10M transfers: 59.4 s against 0.59 s, measured).
		`TRY_CAST(TRY_CAST("${c}" AS HUGEINT) AS DECIMAL(38,0)) AS "${c}_d38"`,
		`TRY_CAST("${c}" AS DOUBLE) AS "${c}_f64"`,
	]);
}

/**
 * One CREATE VIEW per dataset over the files `m` lists (with the numeric forms of its uint256
 * columns), and per token metadata table (token_metadata, token_uris, opening_balances). A
 * dataset with no files yet (the trace datasets of a range exported without traces) gets no
 * view, so a query on it fails loudly instead of answering "no rows".
 */
export function datasetViews(dataDir: string, m: Manifest | null): string[] {
	const lines: string[] = [];
	for (const d of DATASETS) {
		const files = listedFiles(dataDir, m, d);
		if (files.length === 0) {
			lines.push(`-- ${d}: no files yet`);
			continue;
		}
		const select = ["*", ...numericForms(d)].join(", ");
		lines.push(`CREATE OR REPLACE VIEW ${d} AS SELECT ${select} FROM read_parquet([${files.map(quote).join(", ")}]);`);
	}
	for (const t of METADATA_TABLE_NAMES) {
		const files = metadataFiles(dataDir, m, t);
		if (files.length > 0)
			lines.push(`CREATE OR REPLACE VIEW ${t} AS SELECT * FROM read_parquet([${files.map(quote).join(", ")}]);`);
	}
	return lines;
}

/**
 * SQL that defines the views of datasetViews over the chain's files, plus `chunks` (what the
 * manifest says was written, and with which trace source), for `npm run sql` and views.sql.
 */
export function viewsSql(dataDir: string, chainId: string): string {
	const lines = [`-- chainlake views over ${join(dataDir, chainId)}`];
	lines.push(...datasetViews(dataDir, readManifestSafe(dataDir, chainId)));
	const manifest = manifestPath(dataDir, chainId);
	if (existsSync(manifest)) {
		lines.push(
			`CREATE OR REPLACE VIEW chunks AS SELECT unnest(c) FROM (SELECT unnest(chunks) AS c FROM read_json(${quote(manifest)}, maximum_object_size = 1000000000));`,
		);
	}
	return `${lines.join("\n")}\n`;
}
