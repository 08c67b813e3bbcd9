import { existsSync, readFileSync } from "node:fs";
import { copyFile, link, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { DatasetName } from "../../extract/rows.js";
import { crashPoint } from "../../util/crash-point.js";
import { fsyncDir, fsyncFile } from "../../util/fsync.js";
import { removingOnFailure } from "../../util/temp-files.js";
import type { IndexName } from "./indexes.js";
import { hasSlices, partPaths } from "./key-parts.js";
import { manifestPath, partitionPath, type RangeId } from "./layout.js";
import { checkManifestText, manifestDamaged, previousManifestPath } from "./manifest-check.js";
import { type ChunkEntry, type Manifest, type MetadataTable, RANKS, type RankTable, rankTablesOf } from "./records.js";

/* The manifest (format/): `<chain>/_manifest.json` loaded, saved durably, and the files it lists. */

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

/**
 * Writes `m` durably in place of the chain's manifest (the previous one kept beside it), with the
 * next generation. Writers call delta/save-manifest.ts's saveManifest, which also brings the
 * Delta Lake logs up to date.
 */
export async function writeManifest(dataDir: string, m: Manifest): Promise<void> {
	const path = manifestPath(dataDir, m.chain);
	await mkdir(dirname(path), { recursive: true });
	m.chunks.sort((a, b) => a.from - b.from);
	const generation = nextGeneration(m);
	// Version 2 only where a file has cuts, 3 where a cut splits a key by blocks (key-parts.ts
	// sliceCut: an older reader would take a sliced key's first part for all its rows): a folder
	// without them stays readable by older chainlakes.
	const sliced =
		m.chunks.some((c) => Object.values(c.cuts ?? {}).some(hasSlices)) ||
		(m.runs?.some((r) => hasSlices(r.cuts)) ?? false);
	const version = sliced ? 3 : m.chunks.some((c) => c.cuts) || m.runs?.some((r) => r.cuts) ? 2 : 1;
	await removingOnFailure([`${path}.tmp`, `${previousManifestPath(dataDir, m.chain)}.tmp`], async () => {
		await writeFile(`${path}.tmp`, `${JSON.stringify(inKeyOrder({ ...m, version, generation }), null, 1)}\n`);
		// Durable before it is in place, and in place (its folder synced) before the caller goes on to
		// delete what it replaced; the files it lists were synced when written (parquet-writer.ts).
		await fsyncFile(`${path}.tmp`);
		crashPoint("manifest.tmp-written");
		await keepPrevious(dataDir, m.chain);
		await rename(`${path}.tmp`, path);
		await fsyncDir(dirname(path));
	});
	// Counted only once saved: files written for a save that failed keep their (unlisted) names
	// and are rewritten under the same generation, never a listed one's.
	m.generation = generation;
	m.version = version;
	crashPoint("manifest.saved");
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
	// Each index file (every key-range part) with its key filter beside it (absent in folders
	// written before them).
	...(c.indexes ?? []).flatMap((i) => {
		const path = partitionPath(dataDir, chain, i, c);
		return [...partPaths(path, c.parts?.[i]), `${path}.filter`];
	}),
];

/** Files of reorged-out blocks (same columns as blocks). */
export function ghostFiles(dataDir: string, m: Manifest | null): string[] {
	return (m?.ghosts ?? []).map((g) => partitionPath(dataDir, m?.chain ?? "", GHOST_DATASET, g));
}

/** A ranks entry's file in `table` (holdings/holder-ranks.ts). */
export const rankPath = (dataDir: string, chain: string, r: RangeId, table: RankTable = RANKS): string =>
	partitionPath(dataDir, chain, table, r);

/** The files of the listed ranks (at most one entry) in `table`, or in all of its tables (every key-range part). */
export const rankFiles = (dataDir: string, m: Manifest | null, table?: RankTable): string[] =>
	(m?.ranks ?? []).flatMap((r) =>
		rankTablesOf(r)
			.filter(([t]) => table === undefined || t === table)
			.flatMap(([t, parts]) => partPaths(rankPath(dataDir, m?.chain ?? "", r, t), parts)),
	);

/** Token metadata files of `table` listed in the manifest (holdings/token-metadata.ts). */
export const metadataFiles = (dataDir: string, m: Manifest | null, table: MetadataTable): string[] =>
	(m?.metadata ?? []).map((e) => partitionPath(dataDir, m?.chain ?? "", table, e));

export const GHOST_DATASET = "ghost_blocks";
