import type { DatasetName } from "../extract/rows.js";
import { INDEXES, type IndexDef, type IndexName } from "../store/format/indexes.js";
import { hasFiles } from "../store/format/manifest.js";
import type { ChunkEntry } from "../store/format/records.js";
import { MARK_ROWS } from "../store/indexes/key-filter.js";
import { isQuiet } from "./store/key-filters.js";
import type { KeySpan, Params, Row, Snapshot } from "./store/store.js";

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
 * A quiet wallet (an index key no file lists as busy: isQuiet of Snapshot.keyRows) is read in one statement
 * over every file it can be in; a busy one whose files' filters count its rows, in windows sized
 * by them (windowSizer). Other rows are read a window of blocks at a time, in the page's
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

	// In block order, disjoint: the chain's blocks run from the first's start to the last's end.
	const chunks = db.chunks();
	const pieces = piecesOf(
		chunks.filter((c) => c.to >= lo && c.from <= hi && hasFiles(c, q.dataset)),
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
	const [chainFrom, chainTo] = [(chunks[0] as ChunkEntry).from, (chunks.at(-1) as ChunkEntry).to];
	const read = async (window: [number, number], index: IndexSource | undefined) => {
		const from = index ? (index.from ?? `{${index.name}}`) : `{${q.dataset}}`;
		const after = page.after === undefined ? "" : ` AND ${key} ${desc ? "<" : ">"} $after`;
		// A window over every block the chain holds (a whole history: a notebook's usual page) holds
		// every row of every file it reads, so the block condition is left out: each row group read
		// would evaluate it for nothing (sampled quiet wallets' pages 0.91-0.99 of the time on
		// average, BENCHMARKS.md "twenty-eighth figures").
		const everyBlock = window[0] <= chainFrom && window[1] >= chainTo;
		const bounds = everyBlock ? "" : `${blockColumn} BETWEEN $start AND $end AND `;
		const where = `${bounds}(${index?.where ?? q.where})${after}`;
		const params: Params = { ...q.params, limit: page.limit + 1 - rows.length };
		if (!everyBlock) Object.assign(params, { start: window[0], end: window[1] });
		if (page.after !== undefined) params.after = page.after;
		const select = `SELECT ${index?.columns ?? q.columns} FROM ${from} WHERE ${where}`;
		const ordered = `${select} ORDER BY ${key} ${desc ? "DESC" : "ASC"} LIMIT $limit`;
		// Oldest first: in the order the files hold them (see ascending).
		let got: Row[] | undefined;
		if (!desc && !/\bSELECT\b/i.test(where)) {
			got = await db.query(`${select} LIMIT $limit`, params, window, index?.key);
			if (!ascending(got, key)) got = undefined;
		}
		got ??= await db.query(ordered, params, window, index?.key);
		if (index && got.length > 0) used.add(index);
		rows.push(...(index?.decode ? got.map(index.decode) : got));
	};

	const finish = async (): Promise<ListResult> => {
		const hasMore = rows.length > page.limit;
		const out = hasMore ? rows.slice(0, page.limit) : rows;
		for (const index of used) await index.complete?.(out, db);
		return { rows: out, hasMore };
	};
	// A key with few rows in every index file it can be in (a quiet wallet): one statement over
	// them all, each file decoding the row group or two that hold it; windows would cost a
	// statement a file for the same groups, and the probe would read one twice.
	const whole = indexOf(pieces);
	const spans = whole?.key !== undefined ? await db.keyRows(whole.name, whole.key, [lo, hi]) : null;
	if (whole && isQuiet(spans)) {
		await read([lo, hi], whole);
		return finish();
	}
	// A busy key whose files' filters count its rows: windows sized to what the page needs.
	if (whole && spans) {
		const next = windowSizer(spans, lo, hi, desc, fewRows(whole.name));
		for (let w = next(page.limit + 1); w; w = next(page.limit + 1 - rows.length)) {
			await read(w, whole);
			if (rows.length > page.limit) break;
		}
		return finish();
	}
	// The probe: the first few blocks at the page's starting edge.
	const probeBlocks = q.rowsPerBlock ? Math.ceil((page.limit + 1) / q.rowsPerBlock) : FIRST_WINDOW_BLOCKS;
	const edge = desc ? Math.min(hi, first.to) : Math.max(lo, first.from);
	const probe: [number, number] = desc
		? [Math.max(lo, edge - probeBlocks + 1), edge]
		: [edge, Math.min(hi, edge + probeBlocks - 1)];
	await read(probe, indexOf(pieces.filter((c) => c.to >= probe[0] && c.from <= probe[1])));
	// Then the windows, without the blocks the probe read.
	const byIndex = whole !== undefined;
	for (let i = 0, size = 1, want = WINDOW_ROWS; i < pieces.length && rows.length <= page.limit; size *= 2, want *= 2) {
		const j = byIndex ? afterChunks(pieces, i, size) : afterRows(pieces, i, want, q.dataset);
		const batch = pieces.slice(i, j);
		i = j;
		const [a, b] = [batch[0] as Piece, batch.at(-1) as Piece];
		const from = Math.max(lo, Math.min(a.from, b.from), desc ? lo : probe[1] + 1);
		const to = Math.min(hi, Math.max(a.to, b.to), desc ? probe[0] - 1 : hi);
		if (from <= to) await read([from, to], indexOf(batch));
	}
	return finish();
}

/**
 * Whether rows come in ascending `key` order. A page oldest first is read without ORDER BY:
 * every dataset file is sorted by its `key` (format/schema.ts SORT_KEY: id, or number for
 * blocks) and every index file by its key then id (indexes.ts sortKey), a statement's files come
 * in block order (listedFiles, indexFiles) over disjoint blocks, and DuckDB keeps a scan's order
 * through WHERE and LIMIT (its order preservation; not through a join, so not where a condition
 * holds a subquery): the first `limit` rows it reads are the page. That saves the sort, its
 * second pipeline, and the rows past the page (BENCHMARKS.md, eleventh figures). Rows out of
 * order (a file some other tool wrote) are read again with ORDER BY.
 */
function ascending(rows: readonly Row[], key: string): boolean {
	for (let i = 1; i < rows.length; i++) {
		const [a, b] = [(rows[i - 1] as Row)[key], (rows[i] as Row)[key]];
		if (typeof a === "string" && typeof b === "string" ? a > b : Number(a) > Number(b)) return false;
	}
	return true;
}

/**
 * Rows a key is taken to have in a file whose filter does not list it busy: at most the index's
 * busyRows; half that is as good a guess as any, and any guess at or above a page stops the window
 * at that file, which is what it should do (its rows sit in a row group or two, which a window
 * over the whole file decodes no more of than one over part of it).
 */
const fewRows = (index: IndexName): number => ((INDEXES[index] as IndexDef).busyRows ?? 0) / 2;

/** How many more rows a window is sized for than the page still needs, at first (then 4 times more after each window that fell short: a page's other filters may keep few of the key's rows). */
const WINDOW_MARGIN = 1.5;

/**
 * The windows of a busy key's page, from its rows in each file (Snapshot.keyRows), each asked for
 * with the rows the page still needs. A window starts where the last ended and reaches the block
 * by which, as the key's marks tell (the block of every MARK_ROWS-th of its rows in a file), that
 * many rows times a margin have come: a busy wallet's newest page reads a few blocks, not the
 * FIRST_WINDOW_BLOCKS probe (11,557 rows of M's heaviest wallet, 10 ms) and then whole chunks. A
 * file where the key is not busy is taken whole (fewRows). Null once the page's blocks are all read.
 */
export function windowSizer(
	spans: readonly KeySpan[],
	lo: number,
	hi: number,
	desc: boolean,
	few: number,
): (need: number) => [number, number] | null {
	const units = spans
		.filter((s) => s.rows !== 0)
		.map((s) => ({ from: Math.max(s.from, lo), to: Math.min(s.to, hi), rows: s.rows, marks: s.marks }))
		.filter((u) => u.from <= u.to);
	if (desc) units.reverse();
	let edge = desc ? hi : lo;
	let margin = WINDOW_MARGIN;
	let i = 0;
	return (need) => {
		let want = need * margin;
		margin *= 4;
		let end: number | undefined;
		while (i < units.length && want > 0) {
			const u = units[i] as (typeof units)[number];
			// What is left of the file past the edge.
			const [a, b] = desc ? [u.from, Math.min(u.to, edge)] : [Math.max(u.from, edge), u.to];
			const reach =
				a > b ? "none" : u.marks && u.rows !== "few" ? marked(u.marks, u.rows, desc ? b : a, want, desc) : "few";
			if (reach === "none") {
				i++;
				continue;
			}
			if (typeof reach === "number" && (desc ? reach > a : reach < b)) {
				end = reach;
				break;
			}
			// The file's rest is taken: the rows wanted come by its end, or it has fewer.
			want = typeof reach === "number" ? 0 : want - (reach === "few" ? few : reach.short);
			end = desc ? a : b;
			i++;
		}
		if (end === undefined) return null;
		const window: [number, number] = desc ? [end, edge] : [edge, end];
		edge = desc ? end - 1 : end + 1;
		return window;
	};
}

/**
 * Of a busy key's rows in a file (its count and marks), those from block `edge` on (up to it when
 * `desc`): the block by which `want` of them have come, "none" if there are none, or how many
 * there are at least when fewer. Mark j is row j · MARK_ROWS's block; the last, the last row's.
 */
function marked(
	marks: ArrayLike<number>,
	rows: number,
	edge: number,
	want: number,
	desc: boolean,
): number | "none" | { short: number } {
	const last = marks.length - 1;
	const pos = (j: number) => (j === last ? rows - 1 : j * MARK_ROWS);
	// The first mark at or after the edge (asc), or the last at or before it (desc).
	let lo = 0;
	let hi = last;
	if (desc) {
		if ((marks[0] as number) > edge) return "none";
		while (lo < hi) {
			const mid = (lo + hi + 1) >> 1;
			if ((marks[mid] as number) <= edge) lo = mid;
			else hi = mid - 1;
		}
		const first = pos(lo);
		const j = Math.floor((first - Math.ceil(want) + 1) / MARK_ROWS);
		return j < 0 ? { short: first + 1 } : (marks[Math.min(j, last)] as number);
	}
	if ((marks[last] as number) < edge) return "none";
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if ((marks[mid] as number) >= edge) hi = mid;
		else lo = mid + 1;
	}
	const first = pos(lo);
	const target = first + Math.ceil(want) - 1;
	const j = Math.ceil(target / MARK_ROWS);
	if (j < last) return marks[j] as number;
	return target <= rows - 1 ? (marks[last] as number) : { short: rows - first };
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
