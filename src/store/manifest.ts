import { existsSync, readFileSync } from "node:fs";
import { copyFile, link, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { DatasetName } from "../extract/rows.js";
import type { TraceFormat } from "../rpc/types.js";
import { crashPoint } from "../util/crash-point.js";
import { fsyncDir, fsyncFile } from "../util/fsync.js";
import type { LakeSettings } from "./delta/lake-export.js";
import type { RankEntry } from "./holder-ranks.js";
import type { IndexName } from "./indexes.js";
import { chainDir, manifestPath, partitionPath, type RangeId } from "./layout.js";
import { checkManifestText, manifestDamaged, previousManifestPath } from "./manifest-check.js";
import type { RunEntry } from "./runs.js";
import type { MetadataEntry } from "./token-metadata.js";

/** One written block range: its files exist for exactly the datasets listed. */
export interface ChunkEntry {
	from: number;
	to: number;
	/** Trace source used; "none" means the trace datasets are unavailable for this range. */
	traces: TraceFormat | "none";
	datasets: DatasetName[];
	rows: Partial<Record<DatasetName, number>>;
	/** Index files derived from the chunk's datasets (indexes.ts); absent in chunks written before them. */
	indexes?: IndexName[];
	first_parent_hash: string;
	last_hash: string;
	/** The manifest generation that first listed the chunk's files; part of their names (layout.ts). */
	gen?: number;
}

/** A file of reorged-out blocks, with their hashes: a hash that becomes canonical again (a reorg
 * back to a block seen before) is taken out of it in the same save that lists the block. */
export interface GhostEntry extends RangeId {
	/** Absent in folders written before they were recorded; the follower fills them at start. */
	hashes?: string[];
}

/**
 * The checkpoint of a chain's data folder. A chunk is listed only after all its files are in
 * place, so the manifest is the truth: files it does not list are leftovers of a crash and are
 * removed on the next start. It holds no timestamps, so two runs over the same range write the
 * same bytes.
 */
export interface Manifest {
	version: 1;
	chain: string;
	chain_number: number;
	chunks: ChunkEntry[];
	/** Files of blocks that were reorged out (dataset ghost_blocks), kept so their hashes still answer. */
	ghosts?: GhostEntry[];
	/**
	 * The follower's record of the highest stored block it has treated as final (written in a
	 * partition chunk, or compacted): a reorg at or below it is a node fault, refused. Kept here
	 * rather than derived from the node's head, which moves on while the follower is down.
	 * Absent in folders only backfilled.
	 */
	final_through?: number;
	/**
	 * Counts the saves of this manifest (absent before generations existed = 0). Files are named
	 * after the generation that first lists them (layout.ts), so names are never reused.
	 */
	generation?: number;
	/** Merged index runs (runs.ts): where settled chunks' index rows are. */
	runs?: RunEntry[];
	/** Blocks per partition (--partition-size) of the writers: which chunks are settled (runs.ts). */
	partition_size?: number;
	/** Token metadata read from the node (token-metadata.ts), per settled block range covered. */
	metadata?: MetadataEntry[];
	/** Every ERC-20 holding's balance as of a settled block, ranked per token (holder-ranks.ts): at most one. */
	ranks?: RankEntry[];
	/** Rows (all datasets) from which a settled chunk is no longer merged (chunk-merges.ts); absent: COMPACT_ROWS. */
	compact_rows?: number;
	/** The Delta Lake export's settings (delta/lake-export.ts); absent fields take the defaults. */
	lake?: Partial<LakeSettings>;
}

/** The generation the next save will have: what new files are named after. */
export const nextGeneration = (m: Manifest): number => (m.generation ?? 0) + 1;

export async function loadManifest(dataDir: string, chain: string, chainNumber: number): Promise<Manifest> {
	const path = manifestPath(dataDir, chain);
	let text: string;
	try {
		text = await readFile(path, "utf8");
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
		// Gone while its previous generation is there (saves keep one): deleted, not "nothing yet";
		// starting afresh would remove every data file as unlisted.
		if (existsSync(previousManifestPath(dataDir, chain))) throw manifestDamaged(dataDir, chain, MISSING);
		return { version: 1, chain, chain_number: chainNumber, chunks: [] };
	}
	// Not JSON, fields missing, another chain's: MANIFEST_DAMAGED naming the file and the way back.
	const checked = checkManifestText(text, chain);
	if (checked.problem != null) throw manifestDamaged(dataDir, chain, checked.problem);
	if (checked.manifest.chain_number !== chainNumber)
		throw manifestDamaged(
			dataDir,
			chain,
			`it is for chain number ${checked.manifest.chain_number}, not ${chainNumber}`,
		);
	return checked.manifest;
}

/** Writes the manifest to a temporary name, syncs it and renames it: readers see the old or the new, whole. */
/** The manifest's fields in one fixed order, whatever order a reader parsed them in: two runs
 * that reach the same state write the same bytes. Fields this code does not know come last. */
const KEY_ORDER = [
	"version",
	"chain",
	"chain_number",
	"generation",
	"partition_size",
	"compact_rows",
	"lake",
	"final_through",
	"chunks",
	"runs",
	"ghosts",
] as const;
function inKeyOrder(m: Manifest): Manifest {
	const known = new Set<string>(KEY_ORDER);
	const out: Record<string, unknown> = {};
	for (const k of KEY_ORDER) if ((m as unknown as Record<string, unknown>)[k] !== undefined) out[k] = m[k];
	for (const [k, v] of Object.entries(m)) if (!known.has(k)) out[k] = v;
	return out as unknown as Manifest;
}

export async function saveManifest(dataDir: string, m: Manifest): Promise<void> {
	const path = manifestPath(dataDir, m.chain);
	await mkdir(dirname(path), { recursive: true });
	m.chunks.sort((a, b) => a.from - b.from);
	const generation = nextGeneration(m);
	await writeFile(`${path}.tmp`, `${JSON.stringify(inKeyOrder({ ...m, generation }), null, 1)}\n`);
	// Durable before it is in place, and in place (its folder synced) before the caller goes on to
	// delete what it replaced; the files it lists were synced when written (parquet-writer.ts).
	await fsyncFile(`${path}.tmp`);
	crashPoint("manifest.tmp-written");
	await keepPrevious(dataDir, m.chain);
	await rename(`${path}.tmp`, path);
	await fsyncDir(dirname(path));
	// Counted only once saved: files written for a save that failed keep their (unlisted) names
	// and are rewritten under the same generation, never a listed one's.
	m.generation = generation;
	crashPoint("manifest.saved");
	await exportLake(dataDir, m);
}

/** How a chain's Delta Lake export has gone in this process (for /readyz and /metrics). */
export interface LakeExportStatus {
	/** Exports that failed since the process started (each retried at the next save). */
	failures: number;
	/** The last failure, while the export has not succeeded since. */
	problem: { at: number; message: string } | null;
}
const exportStatus = new Map<string, LakeExportStatus>();

/** The Delta Lake export's status of `chain` in this process (none before its first export). */
export const lakeExportStatus = (chain: string): LakeExportStatus | undefined => exportStatus.get(chain);

/**
 * The Delta Lake logs follow every save (delta/lake-export.ts). A failed export does not undo
 * the save: the next save (or writer start) exports the state again, and until then every file
 * the logs still list stays on disk. Imported when first needed: the exporter imports this module.
 */
async function exportLake(dataDir: string, m: Manifest): Promise<void> {
	const { lakeExporter } = await import("./delta/lake-export.js");
	const status = exportStatus.get(m.chain) ?? { failures: 0, problem: null };
	exportStatus.set(m.chain, status);
	try {
		await lakeExporter(chainDir(dataDir, m.chain)).export(m);
		status.problem = null;
	} catch (err) {
		const message = (err as Error).message;
		if (message !== status.problem?.message)
			process.emitWarning(`Delta Lake export of ${m.chain} failed (retried at the next save): ${message}`);
		status.failures++;
		status.problem = { at: Date.now(), message };
	}
}

/** The parts of [from, to] that no chunk covers yet. */
export function missingRanges(m: Manifest, from: number, to: number): [number, number][] {
	const out: [number, number][] = [];
	let cursor = from;
	for (const c of [...m.chunks].sort((a, b) => a.from - b.from)) {
		if (c.to < cursor) continue;
		if (c.from > to) break;
		if (c.from > cursor) out.push([cursor, Math.min(to, c.from - 1)]);
		cursor = Math.max(cursor, c.to + 1);
	}
	if (cursor <= to) out.push([cursor, to]);
	return out;
}

const MISSING = "it is missing, while its previous generation is there (so it existed, and was deleted)";

/**
 * The manifest about to be replaced stays as `_manifest.prev.json` (a hard link to it, swapped
 * in by a rename: the old previous generation or the new, whole), so a damaged manifest can be
 * restored from it (`npm run verify -- --restore-manifest`). Nothing to keep before the first save.
 */
async function keepPrevious(dataDir: string, chain: string): Promise<void> {
	const prev = previousManifestPath(dataDir, chain);
	await rm(`${prev}.tmp`, { force: true });
	try {
		await link(manifestPath(dataDir, chain), `${prev}.tmp`);
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
		// A file system without hard links: a copy (the write lock keeps the manifest still meanwhile).
		await copyFile(manifestPath(dataDir, chain), `${prev}.tmp`);
	}
	await rename(`${prev}.tmp`, prev);
}

/**
 * The manifest as last saved (null: there is none yet), or what is wrong with it: every reader
 * checks it the same way (manifest-check.ts). Never throws.
 */
export function readManifestChecked(
	dataDir: string,
	chain: string,
): { manifest: Manifest | null; problem: string | null } {
	let text: string;
	try {
		text = readFileSync(manifestPath(dataDir, chain), "utf8");
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT")
			return { manifest: null, problem: existsSync(previousManifestPath(dataDir, chain)) ? MISSING : null };
		return { manifest: null, problem: `it cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})` };
	}
	return checkManifestText(text, chain);
}

/** The manifest as last saved, or null if there is none or it is damaged (for status pages). */
export function readManifestSafe(dataDir: string, chain: string): Manifest | null {
	return readManifestChecked(dataDir, chain).manifest;
}

/** The files of `dataset` that the manifest lists, in chain order: what readers should read
 * (a glob would also pick up a crashed run's leftovers before the next run removes them). */
export function listedFiles(
	dataDir: string,
	m: Manifest | null,
	dataset: DatasetName | IndexName,
	/** Only the chunks that overlap these blocks. */
	window?: readonly [number, number],
): string[] {
	if (!m) return [];
	return [...m.chunks]
		.sort((a, b) => a.from - b.from)
		.filter((c) => hasFiles(c, dataset) && (!window || (c.to >= window[0] && c.from <= window[1])))
		.map((c) => partitionPath(dataDir, m.chain, dataset, c));
}

/** Whether a chunk has files of a dataset or an index. */
export const hasFiles = (c: ChunkEntry, name: DatasetName | IndexName): boolean =>
	(c.datasets as string[]).includes(name) || (c.indexes as string[] | undefined)?.includes(name) === true;

/** Every file of a chunk: its datasets', then its indexes'. */
export const chunkFiles = (dataDir: string, chain: string, c: ChunkEntry): string[] => [
	...c.datasets.map((d) => partitionPath(dataDir, chain, d, c)),
	// Each index file with its key filter beside it (absent in folders written before them).
	...(c.indexes ?? []).flatMap((i) => {
		const path = partitionPath(dataDir, chain, i, c);
		return [path, `${path}.filter`];
	}),
];

/** Files of reorged-out blocks (same columns as blocks). */
export function ghostFiles(dataDir: string, m: Manifest | null): string[] {
	return (m?.ghosts ?? []).map((g) => partitionPath(dataDir, m?.chain ?? "", GHOST_DATASET, g));
}

export const GHOST_DATASET = "ghost_blocks";
