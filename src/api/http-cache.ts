import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyReply } from "fastify";
import { DamagedDataError } from "../query/damaged-data-error.js";
import type { Manifest } from "../store/format/records.js";
import { type ApiContext, openChain } from "./context.js";
import { fetchesTokenUris } from "./token-uri.js";

/**
 * HTTP caching of data answers. An answer depends only on the request (path, query string, the
 * Accept header that picks a list's format) and on the chain's files, which change only when its
 * manifest's generation does: the ETag names both, so a client (a notebook's cache, a proxy in
 * front of it) asks again with If-None-Match and gets 304 Not Modified, no query run, until a
 * write commits. An answer wholly at or below the final block (a follower's `final_through`, or
 * for a folder no follower keeps, 64 blocks below its tip: store/runs.ts SETTLE_DEPTH) never
 * changes at all: it is sent `immutable`. Everything else must be revalidated (`no-cache`), and
 * every answer is `private` (it needed a key). Errors stay `no-store` (security-headers.ts).
 */
declare module "fastify" {
	interface FastifyRequest {
		/** This request's ETag and the chain's final block, set for cacheable data routes. */
		httpCache?: { etag: string; final: number | null };
	}
	interface FastifyReply {
		/** Set by a route when its answer's newest block is known (immutableUpTo). */
		newestBlock?: number;
	}
}

/** Immutable answers stay a year in a client's cache (the longest max-age HTTP caches honour). */
const IMMUTABLE = "private, max-age=31536000, immutable";
const REVALIDATE = "private, no-cache";

/** Marks an answer whose newest block is `block`: immutable if that block is final. */
export function immutableUpTo(reply: FastifyReply, block: number): void {
	reply.newestBlock = Math.max(block, reply.newestBlock ?? Number.NEGATIVE_INFINITY);
}

/** Whether an If-None-Match header names `etag` (a list of tags; weak comparison). */
function matches(header: string | undefined, etag: string): boolean {
	if (!header) return false;
	const bare = (t: string) => t.trim().replace(/^W\//, "");
	return header.split(",").some((t) => bare(t) === bare(etag));
}

/**
 * `If-None-Match: *`: "unless an answer exists". Known only once the route has answered: a 200
 * becomes a 304 (onSend), a 404 stays one (it was a 304 before the route ran, for a hash no chain holds).
 */
const anyTag = (header: string | undefined) => header?.trim() === "*";

/**
 * Whether `route` answers from the chain's files alone, so that its answer changes only with the
 * manifest: every GET of /{chain}/v1/ but the SQL endpoint (a POST, and its own limits) and the
 * webhooks, whose answers change with the hooks' files and their deliveries (a browser polling
 * a hook's delivery state sends its ETag by itself, and got 304 for a stale state).
 */
const answersFromFiles = (route: string) =>
	route.includes("/:chain_id/v1/") && !route.endsWith("/sql") && !route.includes("/:chain_id/v1/hooks");

/**
 * Whether an NFT answer holds token content fetched over HTTP (CHAINLAKE_FETCH_TOKEN_URIS=1,
 * api/token-uri.ts): what a token URI's host answers, or null when it fails, is not in the files,
 * so it is not cached either (a passing failure was kept a year in an answer at a final block).
 */
const fetchesContent = (route: string, query: unknown) =>
	fetchesTokenUris() &&
	route.includes("/nft/:chain_id/v1/") &&
	(route.endsWith("/metadata") || (query as { metadata?: unknown } | undefined)?.metadata === true);

/** Registers the hooks on the data routes (answersFromFiles, less fetchesContent). */
export function httpCache(app: FastifyInstance, ctx: ApiContext) {
	app.addHook("preHandler", async (req, reply) => {
		const route = req.routeOptions.url ?? "";
		if ((req.method !== "GET" && req.method !== "HEAD") || !answersFromFiles(route) || fetchesContent(route, req.query))
			return;
		const chain = (req.params as { chain_id?: string }).chain_id;
		if (!chain || !ctx.store.serves(chain)) return;
		// The snapshot the route then reads (openChain keeps it for the request). A damaged manifest
		// is left to the route, which answers 503 MANIFEST_DAMAGED as it would without caching.
		let manifest: Manifest | null;
		try {
			manifest = openChain(ctx, req).manifest();
		} catch (err) {
			if (err instanceof DamagedDataError) return;
			throw err;
		}
		if (!manifest) return;
		const state = ctx.store.stateOf(manifest);
		const what = createHash("sha256")
			.update(`${req.url}\n${req.headers.accept ?? ""}`)
			.digest("base64url")
			.slice(0, 22);
		const etag = `W/"${state.generation}-${what}"`;
		req.httpCache = { etag, final: state.final };
		if (matches(req.headers["if-none-match"], etag)) {
			// The answer the client holds is still the answer: no query runs.
			return reply.code(304).header("ETag", etag).header("Cache-Control", REVALIDATE).send();
		}
	});
	app.addHook("onSend", async (req, reply, payload) => {
		const cache = req.httpCache;
		if (cache && reply.statusCode === 304) reply.header("Cache-Control", REVALIDATE);
		if (!cache || reply.statusCode !== 200) return payload;
		reply.header("ETag", cache.etag);
		if (anyTag(req.headers["if-none-match"])) {
			reply.code(304).header("Cache-Control", REVALIDATE).removeHeader("Content-Type");
			return null;
		}
		const newest = reply.newestBlock;
		const final = newest !== undefined && cache.final !== null && newest <= cache.final;
		reply.header("Cache-Control", final ? IMMUTABLE : REVALIDATE);
		return payload;
	});
}
