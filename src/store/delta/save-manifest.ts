import { chainDir } from "../format/layout.js";
import { writeManifest } from "../format/manifest.js";
import type { Manifest } from "../format/records.js";
import { lakeExporter } from "./lake-export.js";

/*
 * Saving a manifest: written in place (format/manifest.ts), then the chain's Delta Lake logs
 * brought up to date with it. Here, after the export, so that the format imports no exporter.
 */

/** Saves `m` as the chain's manifest (see writeManifest), then exports the lake's Delta logs. */
export async function saveManifest(dataDir: string, m: Manifest): Promise<void> {
	await writeManifest(dataDir, m);
	await exportLake(dataDir, m);
}

/** How a chain's Delta Lake export has gone in this process (for /readyz and /metrics). */
export interface LakeExportStatus {
	/** Exports that failed since the process started (each retried at the next save). */
	failures: number;
	/** The last failure, while the export has not succeeded since. */
	problem: { at: number; message: string } | null;
}
/** By chain folder: a process may write two folders of one chain (a test run, a copy being repaired). */
const exportStatus = new Map<string, LakeExportStatus>();

/** The Delta Lake export's status of `chain` in `dataDir` in this process (none before its first export). */
export const lakeExportStatus = (dataDir: string, chain: string): LakeExportStatus | undefined =>
	exportStatus.get(chainDir(dataDir, chain));

/**
 * The Delta Lake logs follow every save (delta/lake-export.ts). A failed export does not undo
 * the save: the next save (or writer start) exports the state again, and until then every file
 * the logs still list stays on disk.
 */
async function exportLake(dataDir: string, m: Manifest): Promise<void> {
	const dir = chainDir(dataDir, m.chain);
	const status = exportStatus.get(dir) ?? { failures: 0, problem: null };
	exportStatus.set(dir, status);
	try {
		const waiting = await lakeExporter(dir).export(m);
		// Not a failure of the export: its tables wait for a repair of the files named (lake-export.ts).
		status.problem =
			waiting.length === 0
				? null
				: {
						at: status.problem?.at ?? Date.now(),
						message: `the Delta logs stay at their last sound state until these listed files are repaired (npm run verify -- --data-dir ${dataDir} --chain ${m.chain} prints how): ${waiting.map((w) => `${w.file} (${w.problem})`).join(", ")}`,
					};
	} catch (err) {
		const message = (err as Error).message;
		if (message !== status.problem?.message)
			process.emitWarning(`Delta Lake export of ${m.chain} failed (retried at the next save): ${message}`);
		status.failures++;
		status.problem = { at: Date.now(), message };
	}
}
