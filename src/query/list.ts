import type { DatasetName } from "../extract/rows.js";
import type { IndexName } from "../store/indexes.js";
import { hasFiles } from "../store/manifest.js";
import type { Params, Row, Snapshot } from "./store.js";

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

export interface ListQuery {
	dataset: DatasetName;
	columns: string;
	where: string;
	params: Params;
	/** The same rows from an index file (indexes.ts), where the chunks have it: `where` on the index's rows. */
	index?: { name: IndexName; where: string };
	/** Sort and paging column: `id`, or `number` for blocks. */
	key?: "id" | "number";
	blockColumn?: "block_number" | "number";
}

/**
 * One page of `dataset` rows in chain order: `where` is a fixed SQL condition written in
 * src/query (never text from a request), every value in it a bound parameter from `params`.
 * Fetches limit + 1 rows to know whether another page exists.
 *
 * Files are read a window of chunks at a time, in the page's order, with windows of 1, 2, 4, ...
 * chunks, stopping once the page is full: chunks hold disjoint block ranges, so the first
 * limit + 1 rows of the earlier windows are the page. A busy wallet's page comes from the first
 * chunk alone instead of a sort over its whole history; a quiet one costs a few windows.
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

	const chunks = db.chunks().filter((c) => c.to >= lo && c.from <= hi && hasFiles(c, q.dataset));
	if (desc) chunks.reverse();
	const rows: Row[] = [];
	for (let i = 0, size = 1; i < chunks.length && rows.length <= page.limit; i += size, size *= 2) {
		const batch = chunks.slice(i, i + size);
		const window: [number, number] = [
			Math.max(lo, Math.min(...batch.map((c) => c.from))),
			Math.min(hi, Math.max(...batch.map((c) => c.to))),
		];
		const useIndex = q.index !== undefined && batch.every((c) => hasFiles(c, q.index?.name as IndexName));
		const source = useIndex ? q.index?.name : q.dataset;
		const where = useIndex ? q.index?.where : q.where;
		const after = page.after === undefined ? "" : ` AND ${key} ${desc ? "<" : ">"} $after`;
		const sql = `SELECT ${q.columns} FROM {${source}} WHERE ${blockColumn} BETWEEN $start AND $end AND (${where})${after} ORDER BY ${key} ${desc ? "DESC" : "ASC"} LIMIT $limit`;
		const params: Params = { ...q.params, start: window[0], end: window[1], limit: page.limit + 1 - rows.length };
		if (page.after !== undefined) params.after = page.after;
		rows.push(...(await db.query(sql, params, window)));
	}
	const hasMore = rows.length > page.limit;
	return { rows: hasMore ? rows.slice(0, page.limit) : rows, hasMore };
}
