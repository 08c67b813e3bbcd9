import type { Page } from "../../query/list.js";
import type { Row } from "../../query/store/store.js";
import { badRequest } from "../errors.js";
import type { ListQuery } from "../params/params.js";
import type { ResolvedRange } from "../params/range.js";

export const DEFAULT_LIMIT = 100;
const ID = /^[0-9a-f]{16}-[0-9a-f]{4}-[0-9a-f]{8}$/;

/** The page to read: range, limit, order, and the item id after which it starts. */
export function pageOf(q: ListQuery, range: ResolvedRange): Page {
	if (q.offset !== undefined && !ID.test(q.offset)) {
		throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page (an item id)");
	}
	return {
		start: range.start,
		end: range.end,
		limit: q.limit ?? DEFAULT_LIMIT,
		order: q.order ?? "asc",
		after: q.offset,
	};
}

/** The list envelope of api-contract.md §5. */
export function envelope<T extends object>(
	range: ResolvedRange,
	result: { rows: Row[]; hasMore: boolean },
	map: (r: Row) => T,
	nextOffset: (last: Row) => string = (last) => last.id as string,
) {
	return { range: pageRange(range, result, nextOffset), items: result.rows.map(map) };
}

/** The envelope's `range`: the paging state of a page of `result` rows. */
export function pageRange(
	range: ResolvedRange,
	result: { rows: Row[]; hasMore: boolean },
	nextOffset: (last: Row) => string = (last) => last.id as string,
) {
	const last = result.rows[result.rows.length - 1];
	return {
		has_more: result.hasMore,
		start_block: range.start,
		end_block: range.end,
		next_offset: result.hasMore && last ? nextOffset(last) : null,
	};
}

export type PageRange = ReturnType<typeof pageRange>;

export type Envelope = ReturnType<typeof envelope>;

/**
 * The list envelope of a page of holdings as of block `n` (the balances and NFT routes): they
 * sum the whole history up to it, so the range starts at block 0.
 */
export function asOfEnvelope<T extends object>(n: number, hasMore: boolean, nextOffset: string | null, items: T[]) {
	return { range: { has_more: hasMore, start_block: 0, end_block: n, next_offset: nextOffset }, items };
}
