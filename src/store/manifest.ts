import { readFileSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { TraceFormat } from "../extract/extract-block.js";
import type { DatasetName } from "../extract/rows.js";
import { crashPoint } from "../util/crash-point.js";
import { ChainlakeError } from "../util/errors.js";
import type { IndexName } from "./indexes.js";
import { manifestPath, partitionPath, type RangeId } from "./layout.js";

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
}

/** The generation the next save will have: what new files are named after. */
export const nextGeneration = (m: Manifest): number => (m.generation ?? 0) + 1;

export async function loadManifest(dataDir: string, chain: string, chainNumber: number): Promise<Manifest> {
	const path = manifestPath(dataDir, chain);
	let text: string;
	try {
		text = await readFile(path, "utf8");
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT")
			return { version: 1, chain, chain_number: chainNumber, chunks: [] };
		throw err;
	}
	const m = JSON.parse(text) as Manifest;
	if (m.version !== 1 || m.chain !== chain || m.chain_number !== chainNumber) {
		throw new ChainlakeError(
			"MANIFEST_MISMATCH",
			`${path} belongs to ${m.chain} (chain number ${m.chain_number}), not ${chain}: use another --data-dir or the right --chain`,
		);
	}
	return m;
}

/** Writes the manifest to a temporary name and renames it: readers see the old or the new, whole. */
export async function saveManifest(dataDir: string, m: Manifest): Promise<void> {
	const path = manifestPath(dataDir, m.chain);
	await mkdir(dirname(path), { recursive: true });
	m.chunks.sort((a, b) => a.from - b.from);
	const generation = nextGeneration(m);
	await writeFile(`${path}.tmp`, `${JSON.stringify({ ...m, generation }, null, 1)}\n`);
	crashPoint("manifest.tmp-written");
	await rename(`${path}.tmp`, path);
	// Counted only once saved: files written for a save that failed keep their (unlisted) names
	// and are rewritten under the same generation, never a listed one's.
	m.generation = generation;
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

/** The manifest as last saved, or null if there is none or it cannot be read (for status pages). */
export function readManifestSafe(dataDir: string, chain: string): Manifest | null {
	try {
		return JSON.parse(readFileSync(manifestPath(dataDir, chain), "utf8")) as Manifest;
	} catch {
		return null;
	}
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
export const chunkFiles = (dataDir: string, chain: string, c: ChunkEntry): string[] =>
	[...c.datasets, ...(c.indexes ?? [])].map((d) => partitionPath(dataDir, chain, d, c));

/** Every file the manifest lists (datasets, indexes, ghosts): what must never be deleted. */
export function listedPaths(dataDir: string, m: Manifest): Set<string> {
	return new Set([...m.chunks.flatMap((c) => chunkFiles(dataDir, m.chain, c)), ...ghostFiles(dataDir, m)]);
}

/** Files of reorged-out blocks (same columns as blocks). */
export function ghostFiles(dataDir: string, m: Manifest | null): string[] {
	return (m?.ghosts ?? []).map((g) => partitionPath(dataDir, m?.chain ?? "", GHOST_DATASET, g));
}

export const GHOST_DATASET = "ghost_blocks";
