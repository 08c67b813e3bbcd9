import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import type { DatasetName } from "../../extract/rows.js";
import { ChainlakeError, UserInputError } from "../../util/errors.js";
import { sqlString as quote } from "../../util/sql-string.js";
import { writeFileDurably } from "../../util/temp-files.js";
import { acquireWriteLock } from "../files/lock.js";
import type { IndexName } from "../format/indexes.js";
import { partPaths } from "../format/key-parts.js";
import { chainDir, manifestPath, partitionPath } from "../format/layout.js";
import { GHOST_DATASET, readManifestChecked } from "../format/manifest.js";
import { manifestDamaged, manifestFix, readPreviousManifest } from "../format/manifest-check.js";
import { NOT_PARQUET, parquetShape } from "../format/parquet-shape.js";
import type { ChunkEntry, GhostEntry, Manifest } from "../format/records.js";

/* Checking a chain's files (repair/): each listed file against the manifest, and a damaged manifest restored. */

/** A listed file that is not as the manifest says. */
export interface FileProblem {
	/** Relative to the data folder (`eip155-1/logs/logs_..._g3.parquet`): safe to show anywhere. */
	file: string;
	/** Absolute (or as given with the data folder), for the code that reads or replaces it. */
	path: string;
	name: DatasetName | IndexName | typeof GHOST_DATASET;
	from: number;
	to: number;
	problem: string;
	/** A file of reorged-out blocks: it cannot be fetched again, only unlisted. */
	ghost: boolean;
}

/** Every listed file of `chunks` and `ghosts`, with what the manifest recorded about it. */
function listed(dataDir: string, chain: string, chunks: readonly ChunkEntry[], ghosts: readonly GhostEntry[]) {
	const out: { path: string; name: FileProblem["name"]; from: number; to: number; rows?: number; ghost: boolean }[] =
		[];
	for (const c of [...chunks].sort((a, b) => a.from - b.from)) {
		for (const d of c.datasets)
			out.push({
				path: partitionPath(dataDir, chain, d, c),
				name: d,
				from: c.from,
				to: c.to,
				rows: c.rows[d],
				ghost: false,
			});
		for (const i of c.indexes ?? [])
			for (const path of partPaths(partitionPath(dataDir, chain, i, c), c.parts?.[i]))
				out.push({ path, name: i, from: c.from, to: c.to, ghost: false });
	}
	for (const g of ghosts) {
		const path = partitionPath(dataDir, chain, GHOST_DATASET, g);
		out.push({ path, name: GHOST_DATASET, from: g.from, to: g.to, rows: g.hashes?.length, ghost: true });
	}
	return out;
}

/** DuckDB's complaint about a file, without the file's path or the statement. */
function duckProblem(err: unknown): string {
	const line = String((err as Error).message ?? err).split("\n")[0] ?? "";
	if (/No magic bytes/i.test(line)) return NOT_PARQUET;
	if (/No files found/i.test(line)) return "missing";
	return `unreadable (${line.replace(/(["'`]).*?\1/g, "…").slice(0, 160)})`;
}

export interface CheckOptions {
	/** Also read every value of every file (finds pages corrupted in the middle); default: the
	 * Parquet footer and row counts only. */
	full?: boolean;
}

/**
 * Checks the listed files of `chunks` (and `ghosts`): each exists, its Parquet metadata reads,
 * and it holds the row count the manifest recorded (datasets; ghost files: their recorded
 * hashes; index files have no recorded count, so they must only read). With `full`, every
 * value is read too. Returns the files that fail, in chain order.
 */
export async function checkFiles(
	dataDir: string,
	chain: string,
	chunks: readonly ChunkEntry[],
	ghosts: readonly GhostEntry[] = [],
	opts: CheckOptions = {},
): Promise<FileProblem[]> {
	const files = listed(dataDir, chain, chunks, ghosts);
	if (files.length === 0) return [];
	const problems: FileProblem[] = [];
	const db = await DuckDBInstance.create(":memory:", { threads: "2" });
	const conn = await db.connect();
	try {
		for (const f of files) {
			const report = (problem: string) =>
				problems.push({
					file: relative(dataDir, f.path),
					path: f.path,
					name: f.name,
					from: f.from,
					to: f.to,
					problem,
					ghost: f.ghost,
				});
			const shape = await parquetShape(f.path);
			if (shape) {
				report(shape);
				continue;
			}
			let rows: number;
			try {
				const r = await conn.runAndReadAll(`SELECT num_rows FROM parquet_file_metadata(${quote(f.path)})`);
				rows = Number(r.getRowObjectsJS()[0]?.num_rows);
				if (opts.full) await conn.run(`SELECT bit_xor(hash(COLUMNS(*))) FROM read_parquet(${quote(f.path)})`);
			} catch (err) {
				report(duckProblem(err));
				continue;
			}
			if (f.rows != null && rows !== f.rows)
				report(`holds ${rows} rows where the manifest recorded ${f.rows}: not the file that was written`);
		}
	} finally {
		conn.closeSync();
		db.closeSync();
	}
	return problems;
}

/** Damaged ranges merged where they touch, in chain order: one repair command each. */
export function damagedRanges(problems: readonly FileProblem[]): [number, number][] {
	const out: [number, number][] = [];
	for (const p of [...problems].sort((a, b) => a.from - b.from)) {
		const last = out.at(-1);
		if (last && p.from <= last[1] + 1) last[1] = Math.max(last[1], p.to);
		else out.push([p.from, p.to]);
	}
	return out;
}

/** The command that repairs blocks [from, to] (the backfill refetches damaged ranges it is given). */
export const repairCommand = (dataDir: string, chain: string, from: number, to: number): string =>
	`npm run backfill -- --chain ${chain} --rpc <node url> --data-dir ${dataDir} --from ${from} --to ${to}`;

export interface ChainReport {
	chain: string;
	/** The manifest's own damage (MANIFEST_DAMAGED message), when it cannot be read at all. */
	manifestError: string | null;
	chunks: number;
	files: number;
	problems: FileProblem[];
}

/** Checks a chain folder: its manifest, then every file it lists (see checkFiles). */
export async function verifyChain(dataDir: string, chain: string, opts: CheckOptions = {}): Promise<ChainReport> {
	const { manifest, problem } = readManifestChecked(dataDir, chain);
	if (problem != null)
		return {
			chain,
			manifestError: manifestDamaged(dataDir, chain, problem).message,
			chunks: 0,
			files: 0,
			problems: [],
		};
	if (!manifest) return { chain, manifestError: null, chunks: 0, files: 0, problems: [] };
	const problems = await checkFiles(dataDir, chain, manifest.chunks, manifest.ghosts ?? [], opts);
	const files = listed(dataDir, chain, manifest.chunks, manifest.ghosts ?? []).length;
	return { chain, manifestError: null, chunks: manifest.chunks.length, files, problems };
}

/**
 * Puts the previous generation of a damaged manifest back in place (the damaged one is kept as
 * `_manifest.damaged.json`). Its files may have been replaced since (a compaction, a reorg):
 * verify then names those ranges, and the backfill fetches them again. Its generation is raised
 * past every generation a file on disk is named after, so no name is ever used twice. Takes the
 * chain's write lock.
 */
export async function restoreManifest(dataDir: string, chain: string): Promise<Manifest> {
	const unlock = await acquireWriteLock(chainDir(dataDir, chain));
	try {
		const path = manifestPath(dataDir, chain);
		const { manifest, problem } = readManifestChecked(dataDir, chain);
		if (problem == null) {
			throw new UserInputError(
				"MANIFEST_SOUND",
				manifest
					? `${path} is sound: nothing to restore (run verify without --restore-manifest to check its files)`
					: `${path} does not exist: nothing to restore`,
			);
		}
		const prev = readPreviousManifest(dataDir, chain);
		if (!prev)
			throw new ChainlakeError("MANIFEST_DAMAGED", `${path} is damaged: ${problem}. ${manifestFix(dataDir, chain)}`);
		prev.generation = Math.max(prev.generation ?? 0, await highestFileGeneration(chainDir(dataDir, chain)));
		// Both through a temporary name: on a full disk neither is left half-written (the damaged
		// manifest stays where it was, for the next try).
		if (existsSync(path))
			await writeFileDurably(join(chainDir(dataDir, chain), "_manifest.damaged.json"), await readFile(path));
		await writeFileDurably(path, Buffer.from(`${JSON.stringify(prev, null, 1)}\n`));
		return prev;
	} finally {
		unlock();
	}
}

/** The highest `_g<gen>` among the files under a chain folder (0 if none). */
async function highestFileGeneration(dir: string): Promise<number> {
	let highest = 0;
	for (const name of await readdir(dir, { recursive: true })) {
		const g = /_g(\d+)\.parquet(\.tmp)?$/.exec(String(name));
		if (g) highest = Math.max(highest, Number(g[1]));
	}
	return highest;
}

/**
 * The chunks and ghost files chosen by `which` that have a damaged listed file (the cheap check
 * of checkFiles: present, footer readable, row counts as recorded), for a backfill or a follower
 * to fetch again (ghosts: to unlist, as reorged-out blocks cannot be fetched again).
 */
export async function damagedIn(
	dataDir: string,
	manifest: Manifest,
	which: (r: { from: number; to: number }, ghost: boolean) => boolean,
): Promise<{ chunks: ChunkEntry[]; ghosts: GhostEntry[]; problems: FileProblem[] }> {
	const chunks = manifest.chunks.filter((c) => which(c, false));
	const ghosts = (manifest.ghosts ?? []).filter((g) => which(g, true));
	const problems = await checkFiles(dataDir, manifest.chain, chunks, ghosts);
	const bad = new Set(problems.map((p) => p.path));
	const hit = (c: ChunkEntry) =>
		[...c.datasets, ...(c.indexes ?? [])].some((d) =>
			partPaths(partitionPath(dataDir, manifest.chain, d, c), c.parts?.[d as IndexName]).some((p) => bad.has(p)),
		);
	return {
		chunks: chunks.filter(hit),
		ghosts: ghosts.filter((g) => bad.has(partitionPath(dataDir, manifest.chain, GHOST_DATASET, g))),
		problems,
	};
}
