/**
 * Key-range parts of an index file. DuckDB walks every row group of a Parquet file it opens,
 * even when min/max statistics rule them all out: on M, 11-14 ms for one column of a
 * 661-row-group run and 38-61 ms for 15 columns, to return one to three rows; the same run in 16
 * address-range files: 58 → 24 ms a read; a transaction record in a 500-row-group file 4.3-4.5 ms,
 * in one of 17 key-range files 1.8-2.2 (issue 26, BENCHMARKS.md). So a large index file is
 * written as `parts` files of about PART_ROW_GROUPS row groups each, split by the key's leading
 * hex digits, and a lookup opens the one part its key falls in: which one is arithmetic on the
 * key (keys are hashes or addresses, uniform in their digits), so readers hold no directory of
 * boundaries. The count is kept in the manifest (a chunk's `parts`, a run's `parts`); absent: one
 * file, as every file written before parts existed.
 *
 * Part 0 keeps the file's own name, so a one-part file is named as before; part i > 0 is
 * `<name>.p<i>.parquet`. Part i holds the keys k with bound(i) <= k < bound(i + 1) compared as
 * text (bound(0) and bound(parts) open), so every key, hex or not, is in exactly one part.
 */

/** Row groups per part: about what the split measured (a run's 661 in 16 files: 41). */
export const PART_ROW_GROUPS = 32;
/** Parts are a power of two up to this: 4 hex digits of key prefix. */
export const MAX_PARTS = 4096;

/**
 * The parts to write `rows` rows of an index with row groups of `rowGroupSize` rows in
 * (`groupsPerPart` of them a part).
 * CHAINLAKE_PART_ROWS sets the rows a part holds instead (tests: many parts from a small chain).
 */
export function partsFor(rows: number, rowGroupSize: number, groupsPerPart = PART_ROW_GROUPS): number {
	const perPart = Number(process.env.CHAINLAKE_PART_ROWS) || rowGroupSize * groupsPerPart;
	const wanted = Math.ceil(rows / perPart);
	let parts = 1;
	while (parts < wanted && parts < MAX_PARTS) parts *= 2;
	return parts;
}

/** The lowest key of part `i` of `parts` ("0x" and 4 hex digits), for i in 1..parts-1. */
export const partBound = (i: number, parts: number): string =>
	`0x${Math.floor((i * 0x10000) / parts)
		.toString(16)
		.padStart(4, "0")}`;

/** The part `key` is in. */
export function partOf(key: string, parts: number): number {
	let lo = 0;
	let hi = parts - 1;
	while (lo < hi) {
		const mid = (lo + hi + 1) >> 1;
		if (key >= partBound(mid, parts)) lo = mid;
		else hi = mid - 1;
	}
	return lo;
}

/** Part `i`'s file, of the index file at `path`. */
export const partPath = (path: string, i: number): string =>
	i === 0 ? path : path.replace(/\.parquet$/, `.p${i}.parquet`);

/** Every part's file of the index file at `path`. */
export const partPaths = (path: string, parts = 1): string[] =>
	Array.from({ length: parts }, (_, i) => partPath(path, i));

/** The SQL condition on column `key` that selects part `i` of `parts` (bounds are our own hex text). */
export function partCondition(key: string, i: number, parts: number): string {
	const lower = i > 0 ? `"${key}" >= '${partBound(i, parts)}'` : null;
	const upper = i < parts - 1 ? `"${key}" < '${partBound(i + 1, parts)}'` : null;
	return [lower, upper].filter((c) => c !== null).join(" AND ") || "true";
}

/**
 * SQL of the part (0..parts-1) column `key` is in, as partCondition decides it: for a
 * lower-case hex key (the rule) arithmetic on its first four hex digits, which compares as the
 * text does; any other key against the bounds as text. NULL for a NULL key, as no part's
 * condition holds for it.
 */
export function partNumberSql(key: string, parts: number): string {
	const bounds = Array.from({ length: parts - 1 }, (_, i) => `'${partBound(i + 1, parts)}'`);
	return `CASE WHEN regexp_full_match(substr("${key}", 1, 6), '0x[0-9a-f]{4}') THEN ('0x' || substr("${key}", 3, 4))::INTEGER // ${0x10000 / parts} ELSE len(list_filter([${bounds.join(", ")}]::VARCHAR[], b -> "${key}" >= b)) END`;
}

/**
 * Of index files `files` (every part of each, as partPaths lists them), those whose key range
 * meets part `i` of `parts`: parts are powers of two, so ranges nest and this is arithmetic.
 */
export function keyRangeFiles(files: readonly string[], i: number, parts: number): string[] {
	const whole = (f: string) => f.replace(/\.p\d+\.parquet$/, ".parquet");
	const count = new Map<string, number>();
	for (const f of files) count.set(whole(f), (count.get(whole(f)) ?? 0) + 1);
	const index = (f: string) => Number(/\.p(\d+)\.parquet$/.exec(f)?.[1] ?? 0);
	const last = new Map<string, number>();
	for (const f of files) last.set(whole(f), Math.max(last.get(whole(f)) ?? 0, index(f)));
	return files.filter((f) => {
		const of = count.get(whole(f)) as number;
		const j = index(f);
		// Not a whole set of parts (never passed so): kept, its statistics still prune.
		if (last.get(whole(f)) !== of - 1 || (of & (of - 1)) !== 0) return true;
		// Part j of `of` spans [j/of, (j+1)/of) of the key space; part i of `parts` [i/parts, (i+1)/parts).
		return j * parts < (i + 1) * of && i * of < (j + 1) * parts;
	});
}
