import type { DatasetName } from "../extract/rows.js";
import type { IndexName } from "../store/format/indexes.js";
import { hasFiles } from "../store/format/manifest.js";
import type { ChunkEntry } from "../store/format/records.js";
import type { Params, Row, Snapshot } from "./store/store.js";

/** Blocks of a page's first query, the probe (unless the query knows its rows a block, as /blocks does). */
export const FIRST_WINDOW_BLOCKS = 256;
/** Dataset rows of the first window after the probe (four of a dataset file's row groups). */
export const WINDOW_ROWS = 262_144;

export interface Page {
	start: number;
	end: number;
	limit: number;
	order: "asc" | "desc";
	/** The id (or for blocks the number) of the last item already seen; the page starts strictly after it. */
	after?: string | number;
}

export interface ListResult {
	rows: Row[];
	hasMore: boolean;
}

/** Index files a list can read its rows from (a wallet's, from the by-address indexes). */
export interface IndexSource {
	name: IndexName;
	/** The condition on the index's rows (or on `from`'s). */
	where: string;
	/** The key it looks up (a wallet): key filters and key-range parts pick the files. */
	key?: string;
	/** The relation read, where not `{name}` itself (a records index with its fields as columns). */
	from?: string;
	/** The columns read, where not the query's; `decode` turns each row read into the query's columns. */
	columns?: string;
	decode?: (row: Row) => Row;
	/** Completes the page's rows (those decoded from this index) once the page is known, e.g. fillBlockStamps. */
	complete?: (rows: Row[], db: Snapshot) => Promise<void>;
}

export interface ListQuery {
	dataset: DatasetName;
	columns: string;
	where: string;
	params: Params;
	/**
	 * The same rows from index files (indexes.ts), where the chunks have them: the first kind every
	 * chunk of a window has (a folder written before a kind was replaced has the older one).
	 */
	indexes?: readonly IndexSource[];
	/** Sort and paging column: `id`, or `number` for blocks. */
	key?: "id" | "number";
	blockColumn?: "block_number" | "number";
	/** Rows a block, when known (1 for blocks): sizes the first window to the page. */
	rowsPerBlock?: number;
}

/**
 * One page of `dataset` rows in chain order: `where` is a fixed SQL condition written in
 * src/query (never text from a request), every value in it a bound parameter from `params`.
 * Fetches limit + 1 rows to know whether another page exists.
 *
 * A quiet wallet (an index key no file lists as busy: Snapshot.quiet) is read in one statement
 * over every file it can be in. Other rows are read a window of blocks at a time, in the page's
 * order, stopping once the page is full: windows hold disjoint block ranges, so the first
 * limit + 1 rows of the earlier windows are the page.
 * - First a probe of FIRST_WINDOW_BLOCKS blocks at the page's starting edge. Files are sorted so
 *   that row groups cover narrow block ranges (by id; an index by address then id, where a busy
 *   wallet's rows span many row groups), so min/max statistics on block_number skip all but a
 *   few row groups: a busy wallet's newest page, or a page deep in its history, costs a few row
 *   groups instead of a sort of everything it did in that chunk.
 * - Then windows. Read from an index (a wallet), windows of 1, 2, 4, ... chunks: an index read
 *   costs by the files it opens, and the runs hold whole chunks. Read from a dataset (a token's
 *   transfers, a caller's creations), windows of about WINDOW_ROWS, twice that, four times ...
 *   rows (from the manifest's row counts, a merged chunk's spread evenly over its partitions):
 *   as many windows whatever the chain's partition size. Whole chunks there were measured worse
 *   (a window of one merged chunk sorted 14 times the rows of a finer layout's first window), and
 *   so were rows per window from the rows seen so far (activity is so uneven over a chain's
 *   history that one often took in millions of rows to sort). BENCHMARKS.md has the figures.
 */
export async function listRows(db: Snapshot, q: ListQuery, page: Page): Promise<ListResult> {
	const key = q.key ?? "id";
	const blockColumn = q.blockColumn ?? "block_number";
	const desc = page.order === "desc";
	// The cursor's block bounds the page too (an id starts with its block number in hex).
	const afterBlock =
		page.after === undefined
			? undefined
			: typeof page.after === "number"
				? page.after
				: Number.parseInt(page.after.slice(0, 16), 16);
	const lo = !desc && afterBlock !== undefined ? Math.max(page.start, afterBlock) : page.start;
	const hi = desc && afterBlock !== undefined ? Math.min(page.end, afterBlock) : page.end;
	if (lo > hi) return { rows: [], hasMore: false };

	const pieces = piecesOf(
		db.chunks().filter((c) => c.to >= lo && c.from <= hi && hasFiles(c, q.dataset)),
		db.partitionSize(),
		lo,
		hi,
	);
	if (desc) pieces.reverse();
	const first = pieces[0];
	if (!first) return { rows: [], hasMore: false };
	const rows: Row[] = [];
	const used = new Set<IndexSource>();
	const indexOf = (batch: readonly Piece[]) => q.indexes?.find((i) => batch.every((p) => db.indexed(i.name, p.chunk)));
	const read = async (window: [number, number], batch: readonly Piece[]) => {
		const index = indexOf(batch);
		const from = index ? (index.from ?? `{${index.name}}`) : `{${q.dataset}}`;
		const after = page.after === undefined ? "" : ` AND ${key} ${desc ? "<" : ">"} $after`;
		const sql = `SELECT ${index?.columns ?? q.columns} FROM ${from} WHERE ${blockColumn} BETWEEN $start AND $end AND (${index?.where ?? q.where})${after} ORDER BY ${key} ${desc ? "DESC" : "ASC"} LIMIT $limit`;
		const params: Params = { ...q.params, start: window[0], end: window[1], limit: page.limit + 1 - rows.length };
		if (page.after !== undefined) params.after = page.after;
		const got = await db.query(sql, params, window, index?.key);
		if (index && got.length > 0) used.add(index);
		rows.push(...(index?.decode ? got.map(index.decode) : got));
	};

	const finish = async (): Promise<ListResult> => {
		const hasMore = rows.length > page.limit;
		const out = hasMore ? rows.slice(0, page.limit) : rows;
		for (const index of used) await index.complete?.(out, db);
		return { rows: out, hasMore };
	};
	// A key with few rows in every index file it can be in (Snapshot.quiet: a quiet wallet): one
	// statement over them all, each file decoding the row group or two that hold it; windows
	// would cost a statement a file for the same groups, and the probe would read one twice.
	const whole = indexOf(pieces);
	if (whole?.key !== undefined && (await db.quiet(whole.name, whole.key, [lo, hi]))) {
		await read([lo, hi], pieces);
		return finish();
	}
	// The probe: the first few blocks at the page's starting edge.
	const probeBlocks = q.rowsPerBlock ? Math.ceil((page.limit + 1) / q.rowsPerBlock) : FIRST_WINDOW_BLOCKS;
	const edge = desc ? Math.min(hi, first.to) : Math.max(lo, first.from);
	const probe: [number, number] = desc
		? [Math.max(lo, edge - probeBlocks + 1), edge]
		: [edge, Math.min(hi, edge + probeBlocks - 1)];
	await read(
		probe,
		pieces.filter((c) => c.to >= probe[0] && c.from <= probe[1]),
	);
	// Then the windows, without the blocks the probe read.
	const byIndex = whole !== undefined;
	for (let i = 0, size = 1, want = WINDOW_ROWS; i < pieces.length && rows.length <= page.limit; size *= 2, want *= 2) {
		const j = byIndex ? afterChunks(pieces, i, size) : afterRows(pieces, i, want, q.dataset);
		const batch = pieces.slice(i, j);
		i = j;
		const [a, b] = [batch[0] as Piece, batch.at(-1) as Piece];
		const from = Math.max(lo, Math.min(a.from, b.from), desc ? lo : probe[1] + 1);
		const to = Math.min(hi, Math.max(a.to, b.to), desc ? probe[0] - 1 : hi);
		if (from <= to) await read([from, to], batch);
	}
	return finish();
}

/** A partition's blocks within a chunk: the unit windows grow by. */
interface Piece {
	from: number;
	to: number;
	chunk: ChunkEntry;
}

/** The chunks' partitions overlapping [lo, hi], in block order (one piece a chunk without a partition size). */
function piecesOf(chunks: readonly ChunkEntry[], size: number | undefined, lo: number, hi: number): Piece[] {
	const out: Piece[] = [];
	for (const chunk of chunks) {
		if (!size) {
			out.push({ from: chunk.from, to: chunk.to, chunk });
			continue;
		}
		const from = Math.max(chunk.from, lo);
		const to = Math.min(chunk.to, hi);
		for (let p = Math.floor(from / size); p * size <= to; p++)
			out.push({ from: Math.max(chunk.from, p * size), to: Math.min(chunk.to, (p + 1) * size - 1), chunk });
	}
	return out;
}

/** A piece's rows of `dataset`, its chunk's spread evenly over the chunk's blocks. */
const rowsIn = (p: Piece, dataset: DatasetName): number =>
	((p.chunk.rows[dataset] ?? 0) * (p.to - p.from + 1)) / (p.chunk.to - p.chunk.from + 1);

/** The end of a window of `size` chunks' pieces from piece `i`. */
function afterChunks(pieces: readonly Piece[], i: number, size: number): number {
	let j = i;
	for (let seen = 0, last: ChunkEntry | undefined; j < pieces.length; j++) {
		const c = (pieces[j] as Piece).chunk;
		if (c === last) continue;
		if (seen === size) break;
		seen++;
		last = c;
	}
	return j;
}

/** The end of a window of about `want` rows of `dataset` from piece `i` (at least one piece). */
function afterRows(pieces: readonly Piece[], i: number, want: number, dataset: DatasetName): number {
	let j = i;
	for (let n = 0; j < pieces.length && (j === i || n < want); j++) n += rowsIn(pieces[j] as Piece, dataset);
	return j;
}
