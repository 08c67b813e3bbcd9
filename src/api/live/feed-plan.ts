import type { FastifyInstance } from "fastify";
import { ApiError, badRequest } from "../errors.js";
import { type Cursor, decodeCursor, queryHash } from "./cursor.js";
import { isBlocksRoute, type ListPage, listPage, type PageAsk } from "./list-pages.js";

/*
 * What a feed (feed.ts) is asked, checked before its first event: the request, its range and
 * cursor, resolved by asking the list route itself for one item of the caller's range (so its
 * 400s are the route's, sent before a stream's 200 or a hook's 201).
 */

export interface FeedRequest {
	/** "eip155-1" */
	chain: string;
	/** A list route's path without the query, e.g. "/eip155-1/v1/address/0xabc.../transfers". */
	path: string;
	/** The list route's own query parameters (no offset/order/format/limit/cursor). */
	query: Record<string, string>;
	/** Auth headers to ask the route with (the caller's API key). */
	headers: Record<string, string>;
	/** Resume after this event id (Last-Event-ID / ?cursor=). */
	cursor?: string;
	/** 0..64: items only from blocks at least this deep (0: the stored head's too). */
	confirmations: number;
}

export const MAX_CONFIRMATIONS = 64;

/** Parameters of the list routes a feed sets itself. */
const PAGING: Record<string, string> = {
	offset: "a stream resumes with cursor= or the Last-Event-ID header, not offset",
	order: "a stream is in chain order (ascending); omit order",
	format: "a stream's items are JSON in its events; omit format",
	limit: "a stream sends every item of its range; omit limit",
};

export interface Plan {
	ask: PageAsk;
	query: string;
	start: number;
	/** Last block of the range; null: live, forever. */
	end: number | null;
	blocks: boolean;
	cursor: Cursor | null;
}

/** The feed's range and cursor, checked by asking the route for one item of the caller's own range. */
async function planFeed(app: FastifyInstance, req: FeedRequest): Promise<Plan> {
	const k = req.confirmations;
	if (!Number.isInteger(k) || k < 0 || k > MAX_CONFIRMATIONS)
		throw badRequest("INVALID_PARAMETER", `confirmations: must be a whole number from 0 to ${MAX_CONFIRMATIONS}`);
	for (const [name, why] of Object.entries(PAGING))
		if (req.query[name] !== undefined) throw badRequest("INVALID_PARAMETER", `${name}: ${why}`);
	const query = queryHash(req.path, req.query);
	const cursor = req.cursor === undefined ? null : decodeCursor(req.cursor, query);
	// A stream's start without an end runs live: to the list route, that is an end of `latest`.
	const q = { ...req.query };
	if (q.block_number_start !== undefined && q.block_number_end === undefined) q.block_number_end = "latest";
	const ask = { path: req.path, query: q, headers: req.headers };
	// The route's own checks (key, parameters, chain, range) and its resolution of the range.
	const probe = await listPage(app, ask, { limit: 1 }).catch((err) => probePastHead(app, req.chain, ask, err));
	const e = req.query.block_number_end;
	const resolvedOnce =
		req.query.timestamp_end !== undefined || req.query.block_hash !== undefined || e?.startsWith("-") === true;
	const end = resolvedOnce ? probe.end : e === undefined || e === "latest" ? null : Number(e);
	return {
		ask,
		query,
		start: cursor ? cursor.s : probe.start,
		end: cursor ? cursor.e : end,
		blocks: isBlocksRoute(req.path),
		cursor,
	};
}

/**
 * A stream that starts past the stored head (the blocks to come, from a given number on), which
 * the list route refuses (its end, the head, would be before its start): the route checks the
 * rest with the range started at the head, and the stream starts where it was asked. Any other
 * refusal is the route's.
 */
async function probePastHead(app: FastifyInstance, chain: string, ask: PageAsk, err: unknown): Promise<ListPage> {
	const { block_number_start: s, block_number_end: e } = ask.query;
	const head = err instanceof ApiError && err.code === "INVALID_RANGE" ? app.live.store.snapshot(chain).head() : null;
	if (
		head === null ||
		s === undefined ||
		!/^\d+$/.test(s) ||
		Number(s) <= head ||
		!(e === "latest" || /^\d+$/.test(e ?? ""))
	)
		throw err;
	if (e !== "latest" && Number(e) < Number(s)) throw err;
	const probe = await listPage(
		app,
		{ ...ask, query: { ...ask.query, block_number_start: String(head) } },
		{ limit: 1 },
	);
	return { ...probe, start: Number(s) };
}

/**
 * Plans checked by checkFeed, which openFeed takes instead of asking the route again, as long as
 * the request still says the same (a caller may change its cursor in between).
 */
const checked = new WeakMap<FeedRequest, { said: string; plan: Plan }>();
const saying = (r: FeedRequest) => JSON.stringify([r.chain, r.path, r.query, r.headers, r.cursor, r.confirmations]);

/** Validates the request (a bad route, parameter or a cursor of another query throws the same ApiError 400 the list route would). */
export async function checkFeed(app: FastifyInstance, req: FeedRequest): Promise<void> {
	checked.set(req, { said: saying(req), plan: await planFeed(app, req) });
}

/** The request's plan: checkFeed's, if the request still says the same, else made now. */
export async function takePlan(app: FastifyInstance, req: FeedRequest): Promise<Plan> {
	const early = checked.get(req);
	checked.delete(req);
	return early && early.said === saying(req) ? early.plan : await planFeed(app, req);
}
