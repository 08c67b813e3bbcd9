import type { FastifyInstance } from "fastify";
import { ApiError } from "../errors.js";
import { FEED_HEADER } from "./live-options.js";

/*
 * A feed's pages, asked of the list route itself (in-process, app.inject): a stream's items are
 * by construction the list route's, its parameters checked by the same schema and its key by
 * the same hook. Asked as NDJSON, whose lines are the JSON items exactly as the route writes
 * them (integers past 2^53 too, which JSON.parse would round), with the paging state in headers.
 */

/** The range forms and paging parameters a feed sets itself on each page. */
const OWN = ["block_number_start", "block_number_end", "timestamp_start", "timestamp_end", "block_hash"];

export interface PageItem {
	/** The item's JSON text, exactly as the list route writes it. */
	text: string;
	item: Record<string, unknown>;
	/** The item's id (a list item's `id`; for /blocks, null: a block is its own position). */
	id: string | null;
	block: number;
	hash: string;
}

export interface ListPage {
	items: PageItem[];
	hasMore: boolean;
	/** The range the route resolved (X-Start-Block, X-End-Block). */
	start: number;
	end: number;
}

export interface PageAsk {
	path: string;
	query: Record<string, string>;
	headers: Record<string, string>;
}

/** Whether `path` is GET /blocks (items are blocks: `number` and `hash`, paged by block). */
export const isBlocksRoute = (path: string) => /\/v1\/blocks\/?$/.test(path);

/** The route's error as the ApiError it answered with (status, code and message kept). */
function routeError(status: number, body: string): ApiError {
	let parsed: { code?: string; message?: string } = {};
	try {
		parsed = JSON.parse(body);
	} catch {}
	const code = parsed.code ?? "UNAVAILABLE";
	const message = parsed.message ?? `the list route answered ${status}`;
	const known = [400, 401, 403, 404, 406, 429, 503] as const;
	const s = (known as readonly number[]).includes(status) ? (status as (typeof known)[number]) : 503;
	return new ApiError(s, code, message);
}

/**
 * One page: `range` as given (the caller's own range forms) or blocks from..to; after `after`
 * (an item id) when set. Throws the route's error as an ApiError.
 */
export async function listPage(
	app: FastifyInstance,
	ask: PageAsk,
	opts: { range?: [number, number]; after?: string | null; limit: number },
): Promise<ListPage> {
	const query: Record<string, string> = { ...ask.query };
	if (opts.range) {
		for (const k of OWN) delete query[k];
		query.block_number_start = String(opts.range[0]);
		query.block_number_end = String(opts.range[1]);
	}
	Object.assign(query, { order: "asc", format: "ndjson", limit: String(opts.limit) });
	if (opts.after) query.offset = opts.after;
	const res = await app.inject({
		method: "GET",
		url: `${ask.path}?${new URLSearchParams(query)}`,
		headers: { ...ask.headers, accept: "application/x-ndjson", [FEED_HEADER]: app.live.token },
	});
	if (res.statusCode !== 200) throw routeError(res.statusCode, res.body);
	const blocks = isBlocksRoute(ask.path);
	const items = res.body
		.split("\n")
		.filter((l) => l.length > 0)
		.map((text): PageItem => {
			const item = JSON.parse(text) as Record<string, unknown>;
			return blocks
				? { text, item, id: null, block: Number(item.number), hash: String(item.hash) }
				: { text, item, id: String(item.id), block: Number(item.block_number), hash: String(item.block_hash) };
		});
	return {
		items,
		hasMore: res.headers["x-has-more"] === "true",
		start: Number(res.headers["x-start-block"]),
		end: Number(res.headers["x-end-block"]),
	};
}
