import type { DatasetName } from "../extract/rows.js";
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

/**
 * One page of `dataset` rows in chain order: `where` is a fixed SQL condition written in
 * src/query (never text from a request), every value in it a bound parameter from `params`.
 * Fetches limit + 1 rows to know whether another page exists.
 */
export async function listRows(
	db: Snapshot,
	q: {
		dataset: DatasetName;
		columns: string;
		where: string;
		params: Params;
		/** Sort and paging column: `id`, or `number` for blocks. */
		key?: "id" | "number";
		blockColumn?: "block_number" | "number";
	},
	page: Page,
): Promise<ListResult> {
	const key = q.key ?? "id";
	const blockColumn = q.blockColumn ?? "block_number";
	const direction = page.order === "desc" ? "DESC" : "ASC";
	const after = page.after === undefined ? "" : ` AND ${key} ${page.order === "desc" ? "<" : ">"} $after`;
	const sql = `SELECT ${q.columns} FROM {${q.dataset}} WHERE ${blockColumn} BETWEEN $start AND $end AND (${q.where})${after} ORDER BY ${key} ${direction} LIMIT $limit`;
	const params: Params = { ...q.params, start: page.start, end: page.end, limit: page.limit + 1 };
	if (page.after !== undefined) params.after = page.after;
	const rows = page.start > page.end ? [] : await db.query(sql, params);
	const hasMore = rows.length > page.limit;
	return { rows: hasMore ? rows.slice(0, page.limit) : rows, hasMore };
}
