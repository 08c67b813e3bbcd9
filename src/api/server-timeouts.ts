import type { ServerOptions } from "node:http";
import type { FastifyServerOptions } from "fastify";

/** How long the HTTP server waits on a client, in milliseconds. */
export interface ServerTimeouts {
	/** The request's headers must all arrive within this (slowloris: headers sent a byte at a time). */
	headersMs: number;
	/** The whole request must arrive within this (our routes are GETs: in effect, the headers). */
	requestMs: number;
	/** A socket with no traffic either way for this long is closed (a stalled client or query). */
	idleMs: number;
	/**
	 * An idle keep-alive socket is closed after this (Node waits 1 s more than it advertises in
	 * Keep-Alive: timeout). Above the 60 s idle timeout of common load balancers, so a balancer
	 * never sends a request on a socket we are closing.
	 */
	keepAliveMs: number;
	/**
	 * Requests served on one socket: the last answer says Connection: close, later ones on it get
	 * 503 (bounds what one connection can do; clients reconnect).
	 */
	maxRequestsPerSocket: number;
	/**
	 * How often Node checks the header and request deadlines. Node's default is 30 s, which would
	 * let a slow client stay up to 30 s past headersMs.
	 */
	checkEveryMs: number;
	/**
	 * A request not answered within this gets a 503 TIMEOUT (a query too slow). Below idleMs, so
	 * the client gets that answer before the idle socket would be cut.
	 */
	handlerMs: number;
}

export const DEFAULT_TIMEOUTS: ServerTimeouts = {
	headersMs: 10_000,
	requestMs: 30_000,
	idleMs: 60_000,
	keepAliveMs: 65_000,
	maxRequestsPerSocket: 1000,
	checkEveryMs: 1000,
	handlerMs: 30_000,
};

/** The Fastify server options that apply `t` (Fastify passes `http` on to http.createServer). */
export function timeoutOptions(
	t: Partial<ServerTimeouts> = {},
): Partial<FastifyServerOptions> & { http: ServerOptions } {
	const o = { ...DEFAULT_TIMEOUTS, ...t };
	// Node refuses a header deadline later than the request deadline.
	const headersMs = Math.min(o.headersMs, o.requestMs);
	return {
		connectionTimeout: o.idleMs,
		keepAliveTimeout: o.keepAliveMs,
		requestTimeout: o.requestMs,
		maxRequestsPerSocket: o.maxRequestsPerSocket,
		handlerTimeout: o.handlerMs,
		http: { headersTimeout: headersMs, requestTimeout: o.requestMs, connectionsCheckingInterval: o.checkEveryMs },
	};
}
