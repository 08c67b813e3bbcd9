import type { FastifyInstance } from "fastify";

/** Headers a browser page on another origin may read: paging state and rate-limit state. */
export const EXPOSED_HEADERS = [
	"X-RateLimit-Limit",
	"X-RateLimit-Remaining",
	"X-RateLimit-Reset",
	"Retry-After",
	"X-Has-More",
	"X-Next-Offset",
	"X-Start-Block",
	"X-End-Block",
	"Server-Timing",
];

/** The API answers data, never documents: nothing in a response may load, run, frame or submit anything. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The Swagger UI page at /docs: its scripts, styles and images are all served from /docs/static
 * (no inline <script>, no eval needed), and "Try it out" calls this same origin. Styles also
 * allow 'unsafe-inline' because Swagger UI renders descriptions as HTML that may carry style
 * attributes; the page shows no user content, and scripts stay 'self' only.
 */
export const DOCS_CSP =
	"default-src 'self'; script-src 'self'; script-src-attr 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

const isDocs = (route: string | undefined) => route === "/docs" || (route?.startsWith("/docs/") ?? false);

/**
 * CORS and security headers on every response, set in onSend so errors, 404s and the docs get
 * them too. Must be called before other plugins are registered, so their routes inherit the hook.
 *
 * `Access-Control-Allow-Origin: *` is deliberate: the API is read-only and authenticates by an
 * explicit Authorization header, never by cookies or the client's network position, so a page on
 * another origin can only read what its own key lets it read; and with `*` browsers refuse to send
 * credentials (cookies, HTTP auth they cached) at all. Allow-Credentials is therefore never sent.
 */
export function securityHeaders(app: FastifyInstance, basePath: string) {
	app.addHook("onSend", async (req, reply, payload) => {
		const docs = isDocs(req.routeOptions.url);
		reply
			.header("Access-Control-Allow-Origin", "*")
			.header("Access-Control-Expose-Headers", EXPOSED_HEADERS.join(", "))
			.header("X-Content-Type-Options", "nosniff")
			.header("Referrer-Policy", "no-referrer")
			.header("X-Frame-Options", "DENY")
			.header("Content-Security-Policy", docs ? DOCS_CSP : API_CSP);
		// Nothing is kept by default: errors, health and the SQL endpoint. Data answers get their
		// ETag and Cache-Control after this (api/http-cache.ts); the docs' static files keep the
		// caching @fastify/static gives them.
		if (!docs) reply.header("Cache-Control", "no-store");
		reply.removeHeader("X-Powered-By");
		reply.removeHeader("Server");
		return payload;
	});

	// Browsers send a preflight (without the key) before a cross-origin GET carrying Authorization.
	// One wildcard route per data prefix; it is not authenticated (see the onRequest hook in app.ts).
	app.route({
		method: "OPTIONS",
		url: `${basePath}/:chain_id/v1/*`,
		schema: { hide: true },
		handler: async (_req, reply) =>
			reply
				.code(204)
				.header("Allow", "GET, HEAD, OPTIONS")
				.header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
				// Last-Event-ID: a stream's client resuming (api/live/streams.ts).
				.header("Access-Control-Allow-Headers", "Authorization, Accept, Last-Event-ID")
				// Ten minutes: browsers reuse the answer instead of preflighting every request.
				.header("Access-Control-Max-Age", "600")
				.send(),
	});
}
