import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { DATASETS } from "../../src/extract/rows.js";
import { openViews } from "./anvil-chain.js";

/**
 * Every dataset of a chain's data folder as rows in chain order (what a reader sees through the
 * manifest), for comparing two folders built different ways (followed vs backfilled).
 */
export async function datasetRows(dataDir: string, chainId: number): Promise<Record<string, unknown[]>> {
	const views = await openViews(dataDir, chainId);
	try {
		const out: Record<string, unknown[]> = {};
		for (const d of DATASETS) {
			const key = d === "blocks" ? "number" : "id";
			try {
				out[d] = await views.rows(`SELECT * FROM ${d} ORDER BY ${key}`);
			} catch {
				out[d] = [];
			}
		}
		return out;
	} finally {
		views.close();
	}
}

/** Every data file under a chain folder with its sha256, by path: for "byte-identical to a clean run". */
export function fileHashes(chainDir: string): Record<string, string> {
	const out: Record<string, string> = {};
	for (const e of readdirSync(chainDir, { recursive: true, withFileTypes: true })) {
		if (!e.isFile()) continue;
		const path = join(e.parentPath, e.name);
		// Delta logs hold commit times and a table id: test/helpers/delta.ts checks them instead.
		if (relative(chainDir, path).includes("_delta_log")) continue;
		out[relative(chainDir, path)] = createHash("sha256").update(readFileSync(path)).digest("hex");
	}
	return out;
}
