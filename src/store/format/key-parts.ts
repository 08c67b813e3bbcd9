/**
 * Key-range parts of an index file. DuckDB walks every row group of a Parquet file it opens,
 * even when min/max statistics rule them all out: on M, 11-14 ms for one column of a
 * 661-row-group run and 38-61 ms for 15 columns, to return one to three rows; the same run in 16
 * address-range files: 58 → 24 ms a read; a transaction record in a 500-row-group file 4.3-4.5 ms,
 * in one of 17 key-range files 1.8-2.2 (issue 26, BENCHMARKS.md). So a large index file is
 * written as `parts` files of about PART_ROW_GROUPS row groups each, split by the key's leading
 * hex digits, and a lookup opens the one part its key falls in: which one is arithmetic on the
 * key (keys are hashes or addresses, uniform in their digits). The count is kept in the manifest
 * (a chunk's `parts`, a run's `parts`); absent: one file, as every file written before parts existed.
 *
 * A key never splits, so one busy key (the chain's busiest token: 2.1M rows in one of L's runs)
 * made its equal-width part a file of a thousand row groups, which every quiet key of that range
 * then walked (3 ms) and read through an order-keeping LIMIT (3-4 ms more). A key with more rows
 * than half a part (ownPartRows) therefore gets a part of its own: its bounds `K` and `K0` are
 * the file's `cuts` (the manifest's `cuts` beside `parts`; no key of the same length sorts
 * between them), added to the equal-width bounds. The parts' bounds are those two lists merged,
 * held in memory by readers as the manifest is.
 *
 * A busy key's own part is itself split by block when it holds more than a part's rows (an index
 * sorted by key then block, `slices` in indexes.ts): DuckDB walks every row group of the file
 * even for the first page of the key's rows, so M's busiest wallet read its 135 row groups for
 * one (6.75 ms), a file of its first 32 row groups 3.93 (BENCHMARKS.md). Such a split is a slice
 * cut `K#<block, 12 digits>`: the key's rows from that block on are in the next part. As text it
 * sorts after `K` and before `K0`, so the cuts stay one sorted list; a reader picks the slices
 * of the key whose blocks meet its window (partsIn). Slices hold a part's rows each, in groups
 * of 512 rows (sliceRows).
 *
 * Part 0 keeps the file's own name, so a one-part file is named as before; part i > 0 is
 * `<name>.p<i>.parquet`. Part i holds the keys k with bound(i) <= k < bound(i + 1) compared as
 * text (bound(0) and bound(parts) open), so every key, hex or not, is in exactly one part.
 */
import { sqlString } from "../../util/sql-string.js";

/** Row groups per part: about what the split measured (a run's 661 in 16 files: 41). */
export const PART_ROW_GROUPS = 32;
/** Equal-width parts are a power of two up to this (4 hex digits of key prefix); busy keys' own come on top. */
export const MAX_PARTS = 4096;

/** The rows a part holds: `groupsPerPart` row groups, or CHAINLAKE_PART_ROWS (tests: many parts from a small chain). */
const partRows = (rowGroupSize: number, groupsPerPart = PART_ROW_GROUPS): number =>
	Number(process.env.CHAINLAKE_PART_ROWS) || rowGroupSize * groupsPerPart;

/**
 * The equal-width parts to write `rows` rows of an index with row groups of `rowGroupSize` rows
 * in (`groupsPerPart` of them a part).
 */
export function partsFor(rows: number, rowGroupSize: number, groupsPerPart = PART_ROW_GROUPS): number {
	const wanted = Math.ceil(rows / partRows(rowGroupSize, groupsPerPart));
	let parts = 1;
	while (parts < wanted && parts < MAX_PARTS) parts *= 2;
	return parts;
}

/** A key with more rows than this in one index file gets a part of its own (its cuts). */
export const ownPartRows = (rowGroupSize: number, groupsPerPart = PART_ROW_GROUPS): number =>
	Math.floor(partRows(rowGroupSize, groupsPerPart) / 2);

/** A busy key with more rows than this (a part's) has its own part cut by block into slices. */
export const slicedOver = (rowGroupSize: number, groupsPerPart = PART_ROW_GROUPS): number =>
	partRows(rowGroupSize, groupsPerPart);

/**
 * Rows of a busy key's slice (key-parts of an index with `slices`): a part's, in row groups of
 * SLICE_ROW_GROUP_SIZE. A page of a busy key reads one slice and decodes the row group or two
 * holding its rows, and the smaller the group the less it decodes, but the more groups a file has
 * the longer DuckDB walks them: M's busiest wallet's first page read 4.41 ms from its slice of
 * 65,536 rows in groups of 2,048, 4.84 from the same rows in groups of 512, 2.53 from its first
 * 16,384 rows in groups of 512, 3.63 in groups of 256 (BENCHMARKS.md "twenty-second figures").
 * The by-address kinds' parts are 16,384 rows in groups of 512 themselves (indexes.ts).
 */
export const sliceRows = (rowGroupSize: number, groupsPerPart = PART_ROW_GROUPS): number =>
	partRows(rowGroupSize, groupsPerPart);

/** Rows of a slice's row group (written by the small-groups writer: DuckDB writes no fewer than 2,048 a group). */
export const SLICE_ROW_GROUP_SIZE = 512;

/** How a write split an index file: `parts` files in all, `cuts` the bounds of busy keys' own parts among them (sorted). */
export interface PartSplit {
	parts: number;
	cuts: string[];
}

/**
 * How an index file is split, as readers know it: a PartSplit (cuts absent: none), so
 * `parts - cuts.length` equal-width parts; a bare number is equal-width parts only (every file
 * written before cuts, and the wallet records).
 */
export type PartLayout = number | { parts: number; cuts?: readonly string[] };

/** The lowest key of equal-width part `i` of `parts` ("0x" and 4 hex digits), for i in 1..parts-1. */
export const partBound = (i: number, parts: number): string =>
	`0x${Math.floor((i * 0x10000) / parts)
		.toString(16)
		.padStart(4, "0")}`;

/** Marks a slice cut (`K#<block>`): no key holds it (keys are hex or plain text the indexes write). */
const SLICE = "#";
const BLOCK_DIGITS = 12;

/** The cut after which key `key`'s rows from block `block` on are in a part of their own (a slice). */
export const sliceCut = (key: string, block: number): string =>
	`${key}${SLICE}${String(block).padStart(BLOCK_DIGITS, "0")}`;

/** A slice cut's key and block; null for a cut between keys. */
function sliceOf(bound: string): { key: string; block: number } | null {
	const at = bound.length - BLOCK_DIGITS - 1;
	if (at < 0 || bound[at] !== SLICE) return null;
	return { key: bound.slice(0, at), block: Number(bound.slice(at + 1)) };
}

/** Keys and bounds compared as text, as partCondition's SQL compares them (not localeCompare). */
const textOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const partsOf = (layout: PartLayout): number => (typeof layout === "number" ? layout : layout.parts);
const cutsOf = (layout: PartLayout): readonly string[] => (typeof layout === "number" ? [] : (layout.cuts ?? []));

/**
 * The cuts giving `busy` keys (sorted or not) parts of their own beside `equal` equal-width parts,
 * and splitting those parts where `slices` (each a key's blocks from which its rows go on in the
 * next part) say.
 */
export function cutsFor(
	busy: readonly string[],
	equal: number,
	slices: ReadonlyMap<string, readonly number[]> = new Map(),
): string[] {
	const taken = new Set(Array.from({ length: equal - 1 }, (_, i) => partBound(i + 1, equal)));
	const cuts = new Set(busy.flatMap((k) => [k, `${k}0`]).filter((c) => !taken.has(c)));
	for (const k of busy) for (const b of slices.get(k) ?? []) cuts.add(sliceCut(k, b));
	return [...cuts].sort(textOrder);
}

// Bounds are asked on every lookup: kept per count (equal-width) and per cuts list (the manifest's,
// with the equal-width count they were merged with).
const equalBounds = new Map<number, readonly string[]>();
const cutBounds = new WeakMap<readonly string[], { equal: number; bounds: readonly string[] }>();

/** The lower bounds of parts 1..n-1 of `layout`, ascending. */
export function partBounds(layout: PartLayout): readonly string[] {
	const cuts = cutsOf(layout);
	const equal = partsOf(layout) - cuts.length;
	let bounds = equalBounds.get(equal);
	if (!bounds) {
		bounds = Array.from({ length: equal - 1 }, (_, i) => partBound(i + 1, equal));
		equalBounds.set(equal, bounds);
	}
	if (cuts.length === 0) return bounds;
	const known = cutBounds.get(cuts);
	if (known?.equal === equal) return known.bounds;
	const merged = [...bounds, ...cuts].sort(textOrder);
	cutBounds.set(cuts, { equal, bounds: merged });
	return merged;
}

/** The part `key` is in: how many bounds it is not below. */
export function partOf(key: string, layout: PartLayout): number {
	const bounds = partBounds(layout);
	let lo = 0;
	let hi = bounds.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (key >= (bounds[mid] as string)) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

/**
 * The parts `key`'s rows of blocks `window` (all its blocks when absent) can be in, first to
 * last: one, but for a key split into slices (sliceCut), whose cuts follow the key's own bound.
 */
export function partsIn(key: string, layout: PartLayout, window?: readonly [number, number]): number[] {
	const first = partOf(key, layout);
	const bounds = partBounds(layout);
	let from = first;
	let to = first;
	for (let j = first; j < bounds.length; j++) {
		const slice = sliceOf(bounds[j] as string);
		if (slice?.key !== key) break;
		if (window === undefined || slice.block <= window[1]) to = j + 1;
		if (window !== undefined && slice.block <= window[0]) from = j + 1;
	}
	return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** Whether part `i` of `layout` is one of a busy key's slices (the first too: the part its key's own cut opens). */
export function isSlice(i: number, layout: PartLayout): boolean {
	const bounds = partBounds(layout);
	const below = bounds[i - 1];
	const above = bounds[i];
	if (below === undefined) return false;
	return sliceOf(below) !== null || (above !== undefined && sliceOf(above)?.key === below);
}

/** Part `i`'s file, of the index file at `path`. */
export const partPath = (path: string, i: number): string =>
	i === 0 ? path : path.replace(/\.parquet$/, `.p${i}.parquet`);

/** Every part's file of the index file at `path`. */
export const partPaths = (path: string, parts = 1): string[] =>
	Array.from({ length: parts }, (_, i) => partPath(path, i));

/**
 * The SQL condition on column `key` that selects part `i` of `layout` (bounds quoted: cuts are
 * keys). A NULL key (no index holds one: they are kept out by their SELECTs) goes to part 0, so a
 * split never drops a row.
 */
export function partCondition(key: string, i: number, layout: PartLayout): string {
	const bounds = partBounds(layout);
	if (bounds.length === 0) return "true";
	// At or past bound `b`: a slice cut compares the key, then the block (its rows' `block_number`).
	const atOrPast = (b: string, past: boolean) => {
		const slice = sliceOf(b);
		if (!slice) return `"${key}" ${past ? ">=" : "<"} ${sqlString(b)}`;
		const k = sqlString(slice.key);
		return past
			? `("${key}" > ${k} OR ("${key}" = ${k} AND "block_number" >= ${slice.block}))`
			: `("${key}" < ${k} OR ("${key}" = ${k} AND "block_number" < ${slice.block}))`;
	};
	if (i === 0) return `(${atOrPast(bounds[0] as string, false)} OR "${key}" IS NULL)`;
	const lower = atOrPast(bounds[i - 1] as string, true);
	return i < bounds.length ? `${lower} AND ${atOrPast(bounds[i] as string, false)}` : lower;
}

/**
 * SQL of the equal-width part (0..parts-1) column `key` is in, as partCondition decides it: for
 * a lower-case hex key (the rule) arithmetic on its first four hex digits, which compares as the
 * text does; any other key against the bounds as text; a NULL key part 0.
 */
export function partNumberSql(key: string, parts: number): string {
	const bounds = partBounds(parts).map(sqlString);
	return `CASE WHEN "${key}" IS NULL THEN 0 WHEN regexp_full_match(substr("${key}", 1, 6), '0x[0-9a-f]{4}') THEN ('0x' || substr("${key}", 3, 4))::INTEGER // ${0x10000 / parts} ELSE len(list_filter([${bounds.join(", ")}]::VARCHAR[], b -> "${key}" >= b)) END`;
}

/**
 * The equal-width part that part `i` of `layout` lies in (cuts only split equal-width parts): a
 * writer stages rows by equal-width part (partNumberSql, cheap per row) and writes each part from
 * its equal-width part's rows.
 */
export function equalPartOf(i: number, layout: PartLayout): number {
	const equal = partsOf(layout) - cutsOf(layout).length;
	return i === 0 ? 0 : partOf(partBounds(layout)[i - 1] as string, equal);
}

/**
 * Whether an input file whose keys lie in [min, max] (its statistics) can hold keys of part `i`
 * of `layout`: a merge reads, for each part it writes, only the inputs that can.
 */
export function meetsPart(min: string, max: string, i: number, layout: PartLayout): boolean {
	const bounds = partBounds(layout);
	// A slice cut's part starts within its key's rows: a file whose keys reach that key meets it.
	const lower = i === 0 ? "" : (bounds[i - 1] as string);
	return (i === 0 || max >= (sliceOf(lower)?.key ?? lower)) && (i === bounds.length || min < (bounds[i] as string));
}

/** The keys that `cuts` split by blocks (sliceCut). */
export const slicedKeys = (cuts: readonly string[]): Set<string> => new Set(cuts.flatMap((c) => sliceOf(c)?.key ?? []));

/** Whether cuts split a key by blocks: a manifest listing one is version 3. */
export const hasSlices = (cuts: readonly string[] | undefined): boolean =>
	cuts?.some((c) => sliceOf(c) !== null) ?? false;
