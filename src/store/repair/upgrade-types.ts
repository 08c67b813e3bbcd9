import { existsSync } from "node:fs";
import { copyFile, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import type { DatasetName } from "../../extract/rows.js";
import { fsyncDir, fsyncFile } from "../../util/fsync.js";
import { sqlString as quote } from "../../util/sql-string.js";
import { saveManifest } from "../delta/save-manifest.js";
import { indexCopyOptions, orderOf, type ParquetWriter, parquetCopyOptions } from "../files/parquet-writer.js";
import { INDEXES, type IndexDef, type IndexName } from "../format/indexes.js";
import { type PartSplit, partPath } from "../format/key-parts.js";
import { partitionPath, type RangeId } from "../format/layout.js";
import { GHOST_DATASET, nextGeneration } from "../format/manifest.js";
import {
	type ChunkEntry,
	type Manifest,
	METADATA_TABLE_NAMES,
	METADATA_TABLES,
	setChunkParts,
	setRunParts,
} from "../format/records.js";
import { NONCE } from "../format/schema.js";
import { filterPath } from "../indexes/key-filter.js";
import { lookupDbOf } from "../indexes/lookup-db.js";
import { isCoarse, regroup, sharesBusyPart } from "./coarse-indexes.js";

/*
 * Folders written before the stored integers became signed (schema.ts) hold UBIGINT, UINTEGER
 * and UTINYINT columns (and lists and structs of them), which Delta Lake, Iceberg and Spark do
 * not read as DuckDB wrote them. `npm run reindex` rewrites every listed file that has one, with
 * each unsigned type replaced by its signed equivalent and the blocks' proof-of-work `nonce` as
 * DECIMAL(20,0), in the same sort order, row groups, bloom filters and key filters as written.
 * The same pass regroups index files written in coarser row groups than this version writes
 * (coarse-indexes.ts): an entry is rewritten for either reason, once.
 *
 * Files are never overwritten: their names carry the generation that first listed them
 * (layout.ts), so all the files of one manifest entry (a chunk's datasets and indexes, a run, a
 * ghost file, a metadata set) are written under the next generation, the entry takes it, and
 * one save commits them; the old files are the caller's to retire once no reader needs them.
 * One save per entry: an interrupted upgrade resumes with the entries still unsigned.
 */

const UNSIGNED = /\bU(BIGINT|INTEGER|SMALLINT|TINYINT)\b/g;
/** Whether a DuckDB type (a list's or a struct's included) has an unsigned integer in it. */
export const hasUnsigned = (type: string): boolean => new RegExp(UNSIGNED.source).test(type);
/** The type with every unsigned integer in it replaced by the signed one of the same width. */
export const signedType = (type: string): string => type.replace(UNSIGNED, "$1");

/** One file to rewrite: its sort order, its COPY options, and whether it holds block rows (the nonce). */
interface FileOf {
	from: string;
	to: string;
	order: string;
	options: () => string;
	blocks: boolean;
	/** It has a key filter beside it (index files): copied to the new name. */
	filter: boolean;
	/** A key-range part of an index file (every part of it follows in order), with the file's cuts. */
	index?: { name: IndexName; part: number; parts: number; cuts?: readonly string[] };
}

const ident = (s: string) => `"${s.replaceAll('"', '""')}"`;

/** The columns of a Parquet file, with their DuckDB types. */
async function columnsOf(writer: ParquetWriter, path: string): Promise<[string, string][]> {
	const rows = await writer.select(`DESCRIBE SELECT * FROM read_parquet(${quote(path)})`);
	return rows.map((r) => [String(r.column_name), String(r.column_type)]);
}

/** The type a column gets: signed, and the blocks' nonce DECIMAL(20,0). */
const upgraded = (f: FileOf, name: string, type: string) => (f.blocks && name === "nonce" ? NONCE : signedType(type));

const stale = (f: FileOf, columns: [string, string][]) => columns.some(([c, t]) => upgraded(f, c, t) !== t);

/** Copies a file under a temporary name, synced, then renamed into place. */
async function copyDurably(from: string, to: string): Promise<void> {
	await copyFile(from, `${to}.tmp`);
	await fsyncFile(`${to}.tmp`);
	await rename(`${to}.tmp`, to);
	await fsyncDir(dirname(to));
}

/** Writes `f.from` at `f.to` with its types upgraded (an already signed file is copied as it is). */
async function rewrite(writer: ParquetWriter, f: FileOf): Promise<void> {
	const columns = await columnsOf(writer, f.from);
	if (!stale(f, columns)) await copyDurably(f.from, f.to);
	else {
		const select = columns
			.map(([c, t]) => {
				const type = upgraded(f, c, t);
				return type === t ? ident(c) : `CAST(${ident(c)} AS ${type}) AS ${ident(c)}`;
			})
			.join(", ");
		const query = `SELECT ${select} FROM read_parquet(${quote(f.from)}) ORDER BY ${f.order}`;
		// An index part as its kind's writer writes it (small groups where it has them).
		if (f.index) {
			const { name, part, parts, cuts } = f.index;
			await writer.copyIndexPart(name, query, f.to, part, { parts, ...(cuts ? { cuts } : {}) });
		} else await writer.copy(query, f.to, f.options());
	}
	// Key filters hold the keys only, which a rewrite keeps (index files before filters have none).
	if (f.filter && existsSync(filterPath(f.from))) await copyDurably(filterPath(f.from), filterPath(f.to));
}

const ofDataset = (dataDir: string, chain: string, d: DatasetName, from: RangeId, to: RangeId): FileOf => ({
	from: partitionPath(dataDir, chain, d, from),
	to: partitionPath(dataDir, chain, d, to),
	order: orderOf(d),
	options: () => parquetCopyOptions(d),
	blocks: d === "blocks",
	filter: false,
});

/** Every key-range part of an index file (format/key-parts.ts); the filter goes with part 0. */
const ofIndex = (
	dataDir: string,
	chain: string,
	i: IndexName,
	from: RangeId,
	to: RangeId,
	parts = 1,
	cuts?: readonly string[],
): FileOf[] => {
	const def: IndexDef = INDEXES[i];
	return Array.from({ length: parts }, (_, k) => ({
		from: partPath(partitionPath(dataDir, chain, i, from), k),
		to: partPath(partitionPath(dataDir, chain, i, to), k),
		order: orderOf(i),
		options: () => indexCopyOptions(i),
		// An index of blocks rows (blocks_by_hash) has their nonce.
		blocks: def.source === "blocks" && def.columns === undefined,
		filter: k === 0,
		index: { name: i, part: k, parts, cuts },
	}));
};

/**
 * A manifest entry's files, read from its names at `gen` (now) and written at `to` (the new
 * generation); `commit` takes the new generation and how the regrouped indexes are split now.
 */
type Entry = {
	files: (to: RangeId) => FileOf[];
	range: RangeId;
	commit: (gen: number, parts: Map<IndexName, PartSplit>) => void;
	what: string;
	/** Its other files that the rewrite leaves behind (a run's lookup database, written anew later). */
	dropped?: string[];
};

function entriesOf(dataDir: string, m: Manifest): Entry[] {
	const chain = m.chain;
	const chunk = (c: ChunkEntry): Entry => ({
		range: c,
		files: (to) => [
			...c.datasets.map((d) => ofDataset(dataDir, chain, d, c, to)),
			...(c.indexes ?? []).flatMap((i) => ofIndex(dataDir, chain, i, c, to, c.parts?.[i], c.cuts?.[i])),
		],
		commit: (gen, parts) => {
			c.gen = gen;
			for (const [i, split] of parts) setChunkParts(c, i, split);
		},
		what: `blocks ${c.from}..${c.to}`,
	});
	return [
		...m.chunks.map(chunk),
		...(m.runs ?? []).map(
			(r): Entry => ({
				range: r,
				files: (to) => ofIndex(dataDir, chain, r.index, r, to, r.parts, r.cuts),
				commit: (gen, parts) => {
					r.gen = gen;
					const split = parts.get(r.index);
					if (split) setRunParts(r, split);
					// Its lookup database names the old generation: the background merges write a new one.
					delete r.lookup_db;
				},
				what: `run ${r.index} ${r.from}..${r.to}`,
				dropped: lookupDbOf(r, partitionPath(dataDir, chain, r.index, r)),
			}),
		),
		...(m.ghosts ?? []).map(
			(g): Entry => ({
				range: g,
				files: (to) => [
					{
						from: partitionPath(dataDir, chain, GHOST_DATASET, g),
						to: partitionPath(dataDir, chain, GHOST_DATASET, to),
						order: orderOf("blocks"),
						options: () => parquetCopyOptions("blocks"),
						blocks: true,
						filter: false,
					},
				],
				commit: (gen) => {
					g.gen = gen;
				},
				what: `ghost blocks ${g.from}..${g.to}`,
			}),
		),
		...(m.metadata ?? []).map(
			(e): Entry => ({
				range: e,
				files: (to) =>
					METADATA_TABLE_NAMES.map((t) => ({
						from: partitionPath(dataDir, chain, t, e),
						to: partitionPath(dataDir, chain, t, to),
						order: METADATA_TABLES[t].order,
						options: parquetCopyOptions,
						blocks: false,
						filter: false,
					})),
				commit: (gen) => {
					e.gen = gen;
				},
				what: `token metadata ${e.from}..${e.to}`,
			}),
		),
	];
}

/** Whether any file of the entry still has an unsigned type (or a nonce not DECIMAL(20,0)). */
async function entryStale(writer: ParquetWriter, files: FileOf[]): Promise<boolean> {
	for (const f of files) if (stale(f, await columnsOf(writer, f.from))) return true;
	return false;
}

/**
 * The entry's index files to regroup (coarse-indexes.ts): in coarser row groups than written now,
 * or with a busy key sharing a part; not those of a replaced kind, which the same reindex writes
 * the replacement of and then drops.
 */
async function coarseOf(writer: ParquetWriter, files: FileOf[]): Promise<Set<IndexName>> {
	const out = new Set<IndexName>();
	for (const f of files) {
		const index = f.index;
		if (index?.part !== 0 || (INDEXES[index.name] as IndexDef).replacedBy) continue;
		if ((await isCoarse(writer, index.name, f.from)) || (await sharesBusyPart(index.name, f.from, index.cuts)))
			out.add(index.name);
	}
	return out;
}

/**
 * Rewrites an entry's files at their new names: each in its upgraded types, and a coarse
 * index's parts regrouped into this version's row groups and parts (merged into the new name
 * from where they are, or from an upgraded copy where their types are unsigned). Returns how the coarse indexes are split now.
 */
async function rewriteEntry(writer: ParquetWriter, files: FileOf[], coarse: Set<IndexName>) {
	const parts = new Map<IndexName, PartSplit>();
	const pending = new Map<IndexName, { to: string; sources: string[]; typed: string[] }>();
	for (const f of files) {
		const index = f.index;
		if (!index || !coarse.has(index.name)) {
			await rewrite(writer, f);
			continue;
		}
		const p = pending.get(index.name) ?? { to: f.to, sources: [], typed: [] };
		pending.set(index.name, p);
		// A part already in signed types is read as it is; one with unsigned types is upgraded
		// under a temporary name first (removed once merged).
		if (stale(f, await columnsOf(writer, f.from))) {
			const typed = `${f.to}.regroup`;
			await rewrite(writer, { ...f, to: typed, filter: false });
			p.sources.push(typed);
			p.typed.push(typed);
		} else p.sources.push(f.from);
		// Key filters hold the keys only: the part-0 filter covers the whole file, however it is split.
		if (f.filter && existsSync(filterPath(f.from))) await copyDurably(filterPath(f.from), filterPath(p.to));
		if (index.part === index.parts - 1) {
			parts.set(index.name, await regroup(writer, index.name, p.sources, p.to));
			await Promise.all(p.typed.map((t) => rm(t, { force: true })));
		}
	}
	return parts;
}

/**
 * Rewrites, entry by entry, every listed file with an unsigned integer type (see the module
 * comment), one manifest save per entry; `retire` gets each save's unlisted files. Returns the
 * entries rewritten. The caller holds the chain's write lock.
 */
export async function upgradeTypes(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	retire: (files: string[]) => void | Promise<void>,
	onEntry?: (what: string) => void,
): Promise<number> {
	let done = 0;
	for (const entry of entriesOf(dataDir, m)) {
		const current = entry.files(entry.range);
		const coarse = await coarseOf(writer, current);
		if (coarse.size === 0 && !(await entryStale(writer, current))) continue;
		const gen = nextGeneration(m);
		const files = entry.files({ ...entry.range, gen });
		entry.commit(gen, await rewriteEntry(writer, files, coarse));
		await saveManifest(dataDir, m);
		await retire([
			...files.flatMap((f) => (f.filter ? [f.from, filterPath(f.from)] : [f.from])),
			...(entry.dropped ?? []),
		]);
		onEntry?.(entry.what);
		done++;
	}
	return done;
}
