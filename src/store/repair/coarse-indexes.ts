import { sqlString as quote } from "../../util/sql-string.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { INDEXES, type IndexDef, type IndexName } from "../format/indexes.js";
import { ownPartRows, type PartSplit, slicedKeys, slicedOver, sliceRows } from "../format/key-parts.js";
import { type BusyKey, filterPath, loadKeyFilter, MARK_ROWS } from "../indexes/key-filter.js";

/*
 * Index files written in larger row groups than this version writes (the by-address indexes had
 * 16,384 rows a group before issue 26 measured 4,096 twice as fast for a wallet lookup; the lookup
 * records 512 before 256), or with
 * a busy key in a key-range part shared with other keys (written before busy keys had parts of
 * their own: key-parts.ts). They read correctly, only slower; `npm run reindex` rewrites them with
 * the other format upgrades (upgrade-types.ts: the whole manifest entry under its next
 * generation, names never reused), in this version's row groups and key-range parts.
 */

/** The largest row group of a file. */
async function largestRowGroup(writer: ParquetWriter, path: string): Promise<number> {
	const [row] = await writer.select(
		`SELECT max(row_group_num_rows)::BIGINT AS n FROM parquet_metadata(${quote(path)})`,
	);
	return Number(row?.n ?? 0);
}

/**
 * Whether an index file (its first key-range part stands for all: one write made them) has
 * coarser row groups than `index` is written in now. DuckDB's ROW_GROUP_SIZE is a target, not a
 * cap: a short tail joins the group before it (5,606 rows at a target of 4,096 make one group),
 * so only groups past twice the target are another version's; the small-groups writer caps its
 * groups exactly, so any larger group is (the lookup records were 512 rows a group, 128 a part,
 * before 256 and 16: regrouped, they are split into today's parts too).
 */
export async function isCoarse(writer: ParquetWriter, index: IndexName, path: string): Promise<boolean> {
	const def: IndexDef = INDEXES[index];
	return (await largestRowGroup(writer, path)) > (def.smallGroups ? 1 : 2) * def.rowGroupSize;
}

/**
 * Whether index file `path` (part 0's path; the file split with `cuts`) has a key with more rows
 * than a part of its own takes (ownPartRows) and no cut of its own: a file written before cuts,
 * where that key's part made every other key of its range walk its row groups; or, in a kind
 * whose busy keys are sliced by block (key-parts.ts sliceCut), a key with more rows than slicedOver
 * and no slice: written before slices, its first page walked all its row groups. Judged from the
 * key filter's busy keys and their rows (no file read); a kind without busy lists, or a filter
 * written before it recorded their rows, is not judged (its files get cuts when merged again).
 */
export async function sharesBusyPart(index: IndexName, path: string, cuts: readonly string[] = []): Promise<boolean> {
	const def: IndexDef = INDEXES[index];
	if (def.key === "hash" || def.busyRows === undefined) return false;
	let rows: ReadonlyMap<string, BusyKey> | undefined;
	try {
		rows = (await loadKeyFilter(filterPath(path))).busyRows;
	} catch {
		// A missing or damaged filter is reindex's to rebuild (busy-lists.ts), not a reason to regroup.
		return false;
	}
	const most = ownPartRows(def.rowGroupSize, def.partRowGroups);
	const slice = sliceRows(def.rowGroupSize, def.partRowGroups);
	const over = slicedOver(def.rowGroupSize, def.partRowGroups);
	const own = new Set(cuts);
	const sliced = slicedKeys(cuts);
	for (const [key, busy] of rows ?? []) {
		if (busy.rows > most && !own.has(key)) return true;
		if (def.slices && busy.rows > over && !sliced.has(key) && sliceable(busy, slice)) return true;
	}
	return false;
}

/**
 * Whether the writer would cut a key of `busy` rows into slices of `slice` rows: a row at a
 * multiple of `slice` lies in a later block than its first row. Read from its marks (the block of
 * every MARK_ROWS-th row), which may miss a cut between two marks but never claim one the writer
 * would not make: a key whose rows sit in one block is never due again, so reindex is done after
 * one pass.
 */
function sliceable(busy: BusyKey, slice: number): boolean {
	const first = busy.marks[0] ?? 0;
	for (let at = slice; at < busy.rows; at += slice)
		if ((busy.marks[Math.floor(at / MARK_ROWS)] ?? 0) > first) return true;
	return false;
}

/**
 * Writes the rows of `parts` (an index file's key-range parts, already in this version's column
 * types) at `to` in this version's row groups and parts; returns how it is split now. The rows
 * and their order are the same (index files are sorted by their key); `parts` are left as they are.
 */
export const regroup = (writer: ParquetWriter, index: IndexName, parts: string[], to: string): Promise<PartSplit> =>
	writer.mergeIndex(index, parts, to);
