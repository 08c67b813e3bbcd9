import type { OutgoingHttpHeaders } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { stringifyExact } from "../answers/records.js";
import { ApiError, badRequest, errorBody } from "../errors.js";
import { API_CSP, EXPOSED_HEADERS } from "../security-headers.js";
import { openFeed } from "./feed.js";
import { checkFeed, type FeedRequest } from "./feed-plan.js";
import { FEED_HEADER } from "./live-options.js";
import { sseEvent, writeEvents } from "./sse-writer.js";

/*
 * Every list route as Server-Sent Events, when asked with `Accept: text/event-stream`: the
 * request is taken before the route's own schema (which would refuse `cursor` and
 * `confirmations`), after the key check; the feed (feed.ts) checks everything else by asking the
 * route, so errors are the route's, sent before the 200. docs/api-contract.md "Streams".
 */

/** The list routes that stream (as registered, after the base path). */
export const STREAM_ROUTES = [
	"/:chain_id/v1/address/:address/transfers",
	"/:chain_id/v1/address/:address/txs",
	"/:chain_id/v1/blocks",
	"/:chain_id/v1/contracts/creates",
	"/:chain_id/v1/contracts/self-destructs",
	"/:chain_id/v1/contract/:contract/transfers",
	"/:chain_id/v1/events",
	"/:chain_id/v1/calls",
];

/** The feed request of a stream: its parameters less `cursor` and `confirmations`, one value each. */
function feedRequest(req: FastifyRequest): FeedRequest {
	const query: Record<string, string> = {};
	let cursor: string | undefined;
	let confirmations = 0;
	for (const [k, v] of Object.entries(req.query as Record<string, string | string[]>)) {
		if (Array.isArray(v)) throw badRequest("INVALID_PARAMETER", `${k}: give this parameter once`);
		if (k === "cursor") cursor = v;
		else if (k === "confirmations") {
			if (!/^\d{1,2}$/.test(v))
				throw badRequest("INVALID_PARAMETER", "confirmations: must be a whole number from 0 to 64");
			confirmations = Number(v);
		} else query[k] = v;
	}
	// An EventSource reconnecting sends the last id it got, with the URL it first opened (cursor= and all).
	const last = req.headers["last-event-id"];
	if (typeof last === "string" && last.length > 0) cursor = last;
	const headers: Record<string, string> = {};
	if (req.headers.authorization) headers.authorization = req.headers.authorization;
	return {
		chain: (req.params as { chain_id: string }).chain_id,
		path: req.url.split("?")[0] as string,
		query,
		headers,
		cursor,
		confirmations,
	};
}

/** Registers the stream hook (after the key check, which is an earlier onRequest hook). */
export function streamRoutes(app: FastifyInstance, base: string) {
	const routes = new Set(STREAM_ROUTES.map((r) => `${base}${r}`));
	const open = app.live.open;
	const running = new Set<AbortController>();
	// Streams never end by themselves: the app's close ends them (before the server waits for its sockets).
	app.addHook("preClose", async () => {
		for (const stop of running) stop.abort();
	});
	const byKey = open.byKey;

	app.addHook("onRequest", async (req, reply) => {
		if (req.method !== "GET" || !routes.has(req.routeOptions.url ?? "") || req.headers[FEED_HEADER] !== undefined)
			return;
		if (!(req.headers.accept ?? "").includes("text/event-stream")) return;
		const feed = feedRequest(req);
		const { maxStreams, maxStreamsPerKey } = app.live.options;
		const mine = byKey.get(req.caller) ?? 0;
		if (mine >= maxStreamsPerKey)
			throw tooMany(
				reply,
				`this API key has ${mine} streams open, the most one key may have: close one (a stream resumes later from its Last-Event-ID)`,
			);
		if (open.total >= maxStreams)
			throw tooMany(reply, `this server has ${open.total} streams open, its limit: retry later (or on another server)`);
		// The slot is taken before the checks (which wait), so streams opened at once count each other.
		open.total++;
		byKey.set(req.caller, mine + 1);
		const release = () => {
			open.total--;
			const n = (byKey.get(req.caller) ?? 1) - 1;
			if (n <= 0) byKey.delete(req.caller);
			else byKey.set(req.caller, n);
		};
		try {
			await checkFeed(app, feed);
		} catch (err) {
			release();
			throw err;
		}
		reply.hijack();
		const stop = new AbortController();
		running.add(stop);
		void serve(app, req, reply, feed, stop).finally(() => {
			running.delete(stop);
			release();
		});
	});
}

function tooMany(reply: FastifyReply, message: string): ApiError {
	reply.header("Retry-After", "5");
	return new ApiError(429, "STREAM_LIMIT", message);
}

/** Writes the feed's events until the client goes, the range ends, or the reader is too slow. */
async function serve(
	app: FastifyInstance,
	req: FastifyRequest,
	reply: FastifyReply,
	feed: FeedRequest,
	stop: AbortController,
) {
	const res = reply.raw;
	// The client may have gone while the checks ran: its socket is closed already, no event to come.
	const socket = req.raw.socket;
	if (socket.destroyed) stop.abort();
	res.on("close", () => stop.abort());
	socket.once("close", () => stop.abort());
	// Taken over from Fastify, which sends no onSend hook's headers: the rate limit's (set on the
	// reply by now) and security-headers.ts's, written here.
	res.writeHead(200, {
		...(reply.getHeaders() as OutgoingHttpHeaders),
		"access-control-allow-origin": "*",
		"access-control-expose-headers": EXPOSED_HEADERS.join(", "),
		"referrer-policy": "no-referrer",
		"x-frame-options": "DENY",
		"content-security-policy": API_CSP,
		"content-type": "text/event-stream; charset=utf-8",
		"cache-control": "no-store",
		"x-content-type-options": "nosniff",
		// A stream's socket serves nothing after it: closed with it, not left idle for keep-alive.
		connection: "close",
		// Proxies that buffer answers (nginx) pass this one through as it comes.
		"x-accel-buffering": "no",
	});
	// How long an EventSource waits before reconnecting (with Last-Event-ID).
	res.write("retry: 2000\n\n");
	try {
		await writeEvents(openFeed(app, feed, stop.signal), res, app.live.options, stop.signal);
	} catch (err) {
		if (stop.signal.aborted) return;
		const e =
			err instanceof ApiError
				? errorBody(err.statusCode, err.code, err.message)
				: errorBody(
						503,
						"STREAM_FAILED",
						"the stream failed on the server: reconnect with the last event's id (Last-Event-ID)",
					);
		if (!(err instanceof ApiError)) req.log.error({ error: String(err) }, "stream failed");
		res.write(sseEvent("error", stringifyExact(e)));
	} finally {
		stop.abort();
		if (!res.writableEnded) res.end();
	}
}
