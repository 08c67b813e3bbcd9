import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { DATASETS } from "../extract/rows.js";
import { manifestPath } from "../store/layout.js";
import { listedFiles, readManifestSafe } from "../store/manifest.js";

const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * SQL that defines one view per dataset over the partitions the manifest lists, plus `chunks` (what
 * the manifest says was written, and with which trace source). A dataset with no files yet (the
 * trace datasets of a range exported without traces) gets no view, so a query on it fails
 * loudly instead of answering "no rows".
 */
export function viewsSql(dataDir: string, chainId: string): string {
	const lines = [`-- chainlake views over ${join(dataDir, chainId)}`];
	const m = readManifestSafe(dataDir, chainId);
	for (const d of DATASETS) {
		const files = listedFiles(dataDir, m, d);
		if (files.length === 0) {
			lines.push(`-- ${d}: no files yet`);
			continue;
		}
		lines.push(`CREATE OR REPLACE VIEW ${d} AS SELECT * FROM read_parquet([${files.map(quote).join(", ")}]);`);
	}
	const manifest = manifestPath(dataDir, chainId);
	if (existsSync(manifest)) {
		lines.push(
			`CREATE OR REPLACE VIEW chunks AS SELECT unnest(c) FROM (SELECT unnest(chunks) AS c FROM read_json(${quote(manifest)}, maximum_object_size = 1000000000));`,
		);
	}
	return `${lines.join("\n")}\n`;
}

/** Chains present in a data folder (sub-folders named eip155-<n>). */
export function chainsIn(dataDir: string): string[] {
	if (!existsSync(dataDir)) return [];
	return readdirSync(dataDir, { withFileTypes: true })
		.filter((e) => e.isDirectory() && /^eip155-\d+$/.test(e.name))
		.map((e) => e.name)
		.sort();
}
