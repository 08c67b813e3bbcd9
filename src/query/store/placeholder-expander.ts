/**
 * Turns a statement's placeholders (`{transfers}`, `{transfers_by_address}`, `{erc20_ranks}`,
 * `{token_metadata}`, `{name@from-to}`) into the files a manifest lists, as `read_parquet` over a
 * bound list of paths: the one place a statement's files are chosen. Apart from the runner (run-query.ts) because what a placeholder reads (windows,
 * key filters, key-range parts, typed empty relations) grows with each new kind of file.
 */
import { DATASETS, type DatasetName } from "../../extract/rows.js";
import { INDEXES, type IndexName } from "../../store/format/indexes.js";
import { partOf, partPath, partPaths, partsIn } from "../../store/format/key-parts.js";
import {
	GHOST_DATASET,
	ghostFiles,
	listedFiles,
	metadataFiles,
	rankFiles,
	rankPath,
} from "../../store/format/manifest.js";
import {
	type Manifest,
	METADATA_TABLES,
	type MetadataTable,
	RANK_TABLES,
	type RankTable,
	rankTablesOf,
	WALLET_RECORDS,
} from "../../store/format/records.js";
import { SCHEMAS } from "../../store/format/schema.js";
import { RANK_COLUMNS, WALLET_RECORD_COLUMNS } from "../../store/holdings/holder-ranks.js";
import type { KeyFilter } from "../../store/indexes/key-filter.js";
import { indexFiles } from "../../store/indexes/listing.js";
import type { LookupDbs } from "./lookup-dbs.js";

/** `{dataset}`, `{index}` or `{name@from-to}` (with its own block window) in a statement's text. */
export const PLACEHOLDER = /\{([a-z][a-z0-9_]*)(?:@(\d{1,15})-(\d{1,15}))?\}/g;

/**
 * Counts the files a statement reads (and lists them, when `paths` is given); `lists`: each
 * relation's files, bound as the statement's parameters `$files_<i>` (fileListParam); `dbs`: the
 * lookup databases it reads (lookup-dbs.ts), to be attached before it runs.
 */
export type FilesRead = { files: number; paths?: string[]; lists: string[][]; dbs?: string[] };

/**
 * The file lists of a statement as its parameters. The text names them (`read_parquet($files_0)`)
 * instead of embedding the paths, so one prepared statement serves every key and every state of
 * the files: with the paths in the text, each new wallet or hash (its key-range part, the files
 * its key filters admit) was a new statement to prepare (BENCHMARKS.md "fifth figures").
 */
export const fileListParam = (i: number) => `files_${i}`;

/**
 * `filters`: the key filters loaded so far, by file (key-filters.ts); a run without one is read.
 * `dbs`: the lookup databases, where a key's lookup may read them (not from a bucket).
 */
export function placeholderExpander(dataDir: string, filters: ReadonlyMap<string, KeyFilter>, dbs?: LookupDbs) {
	/** `{dataset}` → the files `manifest` lists (of the chunks overlapping `window`, if given), or a
	 * typed empty relation while there are none. `{ghost_blocks}` is the reorged-out blocks, with
	 * the columns of blocks; an index (`{transfers_by_address}`) has its source's columns plus `address`;
	 * `{token_metadata}` and `{token_uris}` are the token metadata (store/token-metadata.ts). */
	const expand = (
		manifest: Manifest | null,
		sql: string,
		queryWindow: readonly [number, number] | undefined,
		key: string | undefined,
		read: FilesRead,
	) =>
		sql.replace(PLACEHOLDER, (whole, name: string, a?: string, b?: string) => {
			// `{name@a-b}`: this relation's own block window (a part of a statement that reads
			// fewer blocks than the rest, like a balance's unsettled tail).
			const window = a === undefined ? queryWindow : ([Number(a), Number(b)] as const);
			if ((RANK_TABLES as readonly string[]).includes(name)) {
				// The holder ranks or head ranks (store/holdings/); callers ask snapshot.ranks() or
				// headRanks() whether to use them.
				const r = manifest?.ranks?.find((e) => rankTablesOf(e).some(([t]) => t === name));
				// A key (a wallet's address, a token) is in the one key-range part of the table it falls in.
				const parts = r && key !== undefined ? rankTablesOf(r).find(([t]) => t === name)?.[1] : undefined;
				if (r && key !== undefined && parts !== undefined)
					return readFiles(
						[
							partPath(
								rankPath(dataDir, manifest?.chain ?? "", r, name as RankTable),
								partOf(key.toLowerCase(), parts),
							),
						],
						read,
					);
				const files = rankFiles(dataDir, manifest, name as RankTable);
				if (files.length > 0) return readFiles(files, read);
				return `(SELECT ${Object.entries(name === WALLET_RECORDS ? WALLET_RECORD_COLUMNS : RANK_COLUMNS)
					.map(([c, type]) => `NULL::${type} AS "${c}"`)
					.join(", ")} WHERE false)`;
			}
			if (name in METADATA_TABLES) {
				const table = METADATA_TABLES[name as MetadataTable];
				const files = metadataFiles(dataDir, manifest, name as MetadataTable);
				if (files.length > 0) return readFiles(files, read);
				return `(SELECT ${Object.entries(table.columns)
					.map(([c, type]) => `NULL::${type} AS "${c}"`)
					.join(", ")} WHERE false)`;
			}
			const ghost = name === GHOST_DATASET;
			const index = name in INDEXES ? INDEXES[name as IndexName] : undefined;
			if (!ghost && !index && !DATASETS.includes(name as DatasetName)) return whole;
			const placed =
				index && manifest
					? indexFiles(dataDir, manifest, name as IndexName, window).filter(
							(f) => key === undefined || !f.filter || filters.get(f.filter)?.has(key) !== false,
						)
					: [];
			// A key's lookup reads the runs that have a lookup database from it (lookup-dbs.ts).
			const looked = key !== undefined && dbs ? placed.filter((f) => f.db !== undefined && dbs.usable(f.db)) : [];
			const files = ghost
				? ghostFiles(dataDir, manifest)
				: index
					? placed
							.filter((f) => !looked.includes(f))
							// A key reads the key-range part it can be in (store/format/key-parts.ts), or a busy
							// key's slices that meet the window, in block order.
							.flatMap((f) =>
								key === undefined
									? partPaths(f.path, f.parts)
									: partsIn(key.toLowerCase(), f, window).map((i) => partPath(f.path, i)),
							)
					: listedFiles(dataDir, manifest, name as DatasetName, window);
			if (looked.length > 0 && dbs) {
				const paths = looked.map((f) => f.db as string);
				read.files += paths.length;
				read.dbs = [...(read.dbs ?? []), ...paths];
				const relations = paths.map((p) => `SELECT * FROM ${dbs.relation(p)}`);
				if (files.length > 0) relations.push(`SELECT * FROM ${readFiles(files, read)}`);
				return relations.length === 1 ? dbs.relation(paths[0] as string) : `(${relations.join(" UNION ALL BY NAME ")})`;
			}
			if (files.length > 0) return readFiles(files, read);
			const source = ghost ? "blocks" : (index?.source ?? (name as DatasetName));
			const own: Record<string, string> | undefined = index && "columns" in index ? index.columns : undefined;
			const typed = own
				? Object.entries(own)
				: Object.entries(SCHEMAS[source] as Record<string, readonly [string, string]>).map(
						([c, [type]]) => [c, type] as const,
					);
			const columns = typed.map(([c, type]) => `NULL::${type} AS "${c}"`);
			if (index && !own && !(index.key in SCHEMAS[source])) columns.unshift(`NULL::VARCHAR AS "${index.key}"`);
			return `(SELECT ${columns.join(", ")} WHERE false)`;
		});
	return expand;
}

/** `read_parquet` over `files`, named by the parameter the runner binds them to (`read.lists`). */
function readFiles(files: string[], read: FilesRead): string {
	read.files += files.length;
	read.paths?.push(...files);
	read.lists.push(files);
	return `read_parquet($${fileListParam(read.lists.length - 1)})`;
}
