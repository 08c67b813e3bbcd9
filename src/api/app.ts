import { timingSafeEqual } from "node:crypto";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import Fastify, {
	type FastifyError,
	type FastifyInstance,
	type FastifyReply,
	type FastifyServerOptions,
	LogController,
} from "fastify";
import { validatorCompiler } from "fastify-type-provider-zod";
import type { FollowSource } from "../follow/follower-stats.js";
import { DamagedDataError } from "../query/damaged-data-error.js";
import { TooManyChangesError } from "../query/deltas.js";
import { QueryTimeoutError } from "../query/query-timeout-error.js";
import { DEFAULT_SQL_LIMITS, type SqlLimits } from "../query/sql/sql-limits.js";
import type { Store } from "../query/store/store.js";
import { UnavailableError } from "../query/unavailable-error.js";
import type { RemoteStatus } from "../remote/remote-lake.js";
import { stringifyExact } from "./answers/records.js";
import { DEFAULT_MAX_RESPONSE_BYTES } from "./answers/send-list.js";
import { authenticate, HOOK_OWNER_HEADER, hookOwnerIdentity } from "./auth.js";
import { clientErrorHandler } from "./client-errors.js";
import { queryMsOf } from "./context.js";
import { ApiError, errorBody, errorSummary } from "./errors.js";
import { DEFAULT_ALLOW_HOSTS, type HostPolicy, parseAllowHosts } from "./hooks/destinations.js";
import { httpCache } from "./http-cache.js";
import type { Keyring } from "./keys.js";
import { createLive, FEED_HEADER, type LiveOptions } from "./live/live-options.js";
import { streamDocs } from "./live/stream-docs.js";
import { streamRoutes } from "./live/streams.js";
import { createMetrics } from "./metrics.js";
import { paramDocsTransform } from "./params/param-docs.js";
import { createRateLimiter, enforceRateLimit, type RateLimitOptions } from "./rate-limit.js";
import { addressRoutes } from "./routes/address.js";
import { balancesRoutes } from "./routes/balances.js";
import { blockRoutes } from "./routes/blocks.js";
import { callRoutes } from "./routes/calls.js";
import { contractRoutes } from "./routes/contracts.js";
import { eventRoutes } from "./routes/events.js";
import { healthRoutes } from "./routes/health.js";
import { hookRoutes } from "./routes/hooks.js";
import { nftRoutes } from "./routes/nfts.js";
import { sqlRoutes } from "./routes/sql.js";
import { txRoutes } from "./routes/txs.js";
import { securityHeaders } from "./security-headers.js";
import { DEFAULT_TIMEOUTS, type ServerTimeouts, timeoutOptions } from "./server-timeouts.js";

export interface AppOptions {
	store: Store;
	keyring: Keyring;
	dataDir: string;
	/** Path prefix before /{chain_id}/v1, e.g. /tsunami (api-contract.md §1). */
	basePath?: string;
	/** The lake's bucket, when this process reads one through a cache (remote/remote-lake.ts), for /readyz. */
	remote?: { status(): RemoteStatus };
	/** Head followers running in this process, by chain, for /metrics and /readyz. */
	followers?: Map<string, FollowSource>;
	logger?: FastifyServerOptions["logger"];
	/**
	 * Requests per second and burst per API key; absent or perSecond 0: no limit. Off by default
	 * here so tests and benchmarks are not throttled; scripts/serve.ts turns it on (50/s, 100).
	 */
	rateLimit?: RateLimitOptions;
	/** Largest list answer sent, in bytes (default 32 MiB); a bigger page is a 400 RESPONSE_TOO_LARGE. */
	maxResponseBytes?: number;
	/** Deadlines for slow clients and slow handlers (defaults in server-timeouts.ts). */
	timeouts?: Partial<ServerTimeouts>;
	/** POST /{chain}/v1/sql: off (403 SQL_DISABLED) unless `enabled`; limits default to DEFAULT_SQL_LIMITS. */
	sql?: { enabled?: boolean; limits?: Partial<SqlLimits> };
	/**
	 * /metrics without a key (default: a key is needed). Its figures (routes, load, heads, node
	 * errors) are for the operator; the writer's status port serves them without a key.
	 */
	metricsPublic?: boolean;
	/** Where webhook deliveries may go (serve --hook-allow-hosts); default: public hosts only. */
	hookPolicy?: HostPolicy;
	/** Streams' settings (api/live/live-options.ts): head poll, heartbeat, caps. */
	live?: Partial<LiveOptions>;
}

declare module "fastify" {
	interface FastifyRequest {
		/** The caller's identity (its key's hash, auth.ts), on data routes; "" elsewhere. */
		caller: string;
	}
}

/**
 * The HTTP API: external plugins (OpenAPI, docs), then auth, then the routes, all answering
 * through one error handler with the body of api-contract.md §3.
 */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
	const timeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };
	const sqlLimits: SqlLimits = { ...DEFAULT_SQL_LIMITS, ...opts.sql?.limits };
	const app = Fastify({
		logger: opts.logger ?? false,
		// One log line per request, written by the onResponse hook below.
		logController: new LogController({ disableRequestLogging: true }),
		// Query strings like ?contract=a&contract=b arrive as arrays, which the schemas refuse.
		routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
		bodyLimit: 1024,
		...timeoutOptions(timeouts),
		clientErrorHandler,
		// Errors raised before routing (a path parameter too long, a malformed URL) get the same body.
		frameworkErrors: (err, _req, reply) => {
			const message =
				err.code === "FST_ERR_MAX_PARAM_LENGTH"
					? "a path parameter is longer than 200 characters: check the address, hash or chain id"
					: "malformed URL: check its percent-escapes";
			(reply as FastifyReply).code(400).send(errorBody(400, "INVALID_PARAMETER", message));
		},
	});
	app.setValidatorCompiler(validatorCompiler);
	app.setReplySerializer((payload) => stringifyExact(payload));
	const live = createLive(opts.store, opts.live);
	const metrics = createMetrics({ dataDir: opts.dataDir, streamsOpen: () => live.open.total });
	const base = opts.basePath ?? "";
	const limiter = opts.rateLimit && opts.rateLimit.perSecond > 0 ? createRateLimiter(opts.rateLimit) : null;
	const ctx = {
		store: opts.store,
		keyring: opts.keyring,
		metrics,
		followers: opts.followers ?? new Map(),
		remote: opts.remote,
		dataDir: opts.dataDir,
		limiter,
		metricsPublic: opts.metricsPublic ?? false,
	};
	app.decorateRequest("caller", "");
	app.decorate("maxResponseBytes", opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
	app.decorate("live", live);
	app.addHook("onClose", async () => live.close());
	// A feed's own page requests (api/live/list-pages.ts), known by this process's secret, compared
	// in constant time (with it a request may act as a hook's owner and skips the rate limit).
	const token = Buffer.from(live.token);
	const fromFeed = (req: { headers: Record<string, unknown> }) => {
		const given = req.headers[FEED_HEADER];
		if (typeof given !== "string") return false;
		const b = Buffer.from(given);
		return b.length === token.length && timingSafeEqual(b, token);
	};
	// First, so every route registered below (docs included) inherits the headers hook.
	securityHeaders(app, base);

	await app.register(swagger, {
		openapi: {
			info: {
				title: "chainlake",
				version: "1",
				description:
					"Blocks, transactions, transfers, contract creations and self-destructs of EVM chains, from Parquet files. Every data route needs an API key (Bearer, or Basic with the key as username). Every shape and error follows docs/api-contract.md of the chainlake repository (docs/interface-spec.md is the service as specified).",
			},
			servers: [{ url: base || "/" }],
			components: {
				securitySchemes: {
					bearer: { type: "http", scheme: "bearer" },
					basic: { type: "http", scheme: "basic" },
				},
			},
			security: [{ bearer: [] }, { basic: [] }],
		},
		// Parameters typed and described (params/param-docs.ts), not as the strings the zod schemas parse.
		transform: paramDocsTransform,
		// Streams: text/event-stream beside each list route's other answers (api/live/stream-docs.ts).
		transformObject: (d) => ("openapiObject" in d ? streamDocs(d.openapiObject) : d.swaggerObject),
	});
	await app.register(swaggerUi, { routePrefix: "/docs" });
	app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());

	// Data routes (/{chain}/v1/...) need a key, checked before anything else about the request;
	// health, readiness and the docs do not, nor do CORS preflights (OPTIONS: browsers never send
	// credentials on them). Decided on the matched route, not the raw URL, which may spell the same
	// route with percent-escapes. The rate limit comes after the key check: a request without a
	// valid key never touches anyone's bucket.
	app.addHook("onRequest", async (req, reply) => {
		if (!req.routeOptions.url?.includes("/:chain_id/v1/") || req.method === "OPTIONS") return;
		// A webhook's feed asks as the hook's owner (auth.ts HOOK_OWNER_HEADER), only with the feed's token.
		const owner = req.headers[HOOK_OWNER_HEADER];
		const identity =
			typeof owner === "string" && fromFeed(req)
				? hookOwnerIdentity(ctx.keyring, owner)
				: authenticate(ctx.keyring, req.headers.authorization);
		req.caller = identity;
		// A stream was charged once, when it opened; its pages are not requests of the client's.
		if (limiter && !fromFeed(req)) enforceRateLimit(limiter, identity, reply);
	});

	// Streams (Accept: text/event-stream on a list route), once the key is known.
	streamRoutes(app, base);

	// ETag, If-None-Match and Cache-Control on the data routes (after the key check above).
	httpCache(app, ctx);

	// The answer's DuckDB time (context.ts queryMsOf), where it read a chain's data; not on a 304,
	// which has no answer (api/http-cache.ts: the check opened the chain's snapshot, and answered
	// from the ETag, or the route's answer to `If-None-Match: *` was dropped).
	app.addHook("onSend", async (req, reply, payload) => {
		const ms = queryMsOf(req);
		if (ms !== undefined && reply.statusCode !== 304) reply.header("Server-Timing", `duckdb;dur=${ms.toFixed(2)}`);
		return payload;
	});

	app.addHook("onResponse", async (req, reply) => {
		metrics.observe(req.routeOptions.url ?? "unmatched", reply.elapsedTime / 1000);
		if (fromFeed(req)) return;
		req.log.info(
			{
				method: req.method,
				route: req.routeOptions.url ?? null,
				status: reply.statusCode,
				ms: Math.round(reply.elapsedTime * 10) / 10,
			},
			"request",
		);
	});

	app.setErrorHandler((err: FastifyError | ApiError, req, reply) => {
		if (err instanceof ApiError) {
			if (err.statusCode === 401) reply.header("WWW-Authenticate", 'Bearer realm="chainlake"');
			return reply.code(err.statusCode).send(errorBody(err.statusCode, err.code, err.message));
		}
		// Query budget (src/query/store/run-query.ts): the request asked for too much work, so say how to ask for less.
		if (err instanceof QueryTimeoutError) {
			req.log.warn({ route: req.routeOptions.url, budgetMs: err.budgetMs }, "query budget exceeded");
			const message = `the query ran past its ${err.budgetMs} ms time budget and was stopped: narrow the block range (block_number_start/block_number_end or timestamp_start/timestamp_end), lower limit or add filters, then retry`;
			return reply.code(503).send(errorBody(503, err.code, message));
		}
		// A balance at a past block that would sum too many holdings from transfers (query/deltas.ts).
		if (err instanceof TooManyChangesError) return reply.code(503).send(errorBody(503, err.code, err.message));
		// Too busy to start a query in time, or the bucket of a reader over S3 did not answer.
		if (err instanceof UnavailableError) {
			req.log.warn({ route: req.routeOptions.url ?? null, code: err.code }, err.message);
			return reply.code(503).send(errorBody(503, err.code, err.message));
		}
		// A listed file (or the manifest) missing or damaged: not the client's doing, nor a bug; the
		// message names the blocks and the operator's repair, no path (src/query/damaged-data-error.ts).
		if (err instanceof DamagedDataError) {
			req.log.error(
				{ route: req.routeOptions.url ?? null, code: err.code, files: err.files.map((f) => f.file) },
				"damaged data",
			);
			return reply.code(503).send(errorBody(503, err.code, err.message));
		}
		const fe = err as FastifyError & { validation?: { instancePath?: string; message?: string; params?: unknown }[] };
		if (fe.validation) {
			return reply.code(400).send(errorBody(400, "INVALID_PARAMETER", validationMessage(fe, req.routeOptions.url)));
		}
		// A body Fastify refused before the handler (too large, unknown media type, bad JSON): the
		// SQL endpoint's says what it takes; every other route is a GET that takes none.
		if (
			fe.code?.startsWith("FST_ERR_CTP_") &&
			fe.statusCode &&
			fe.statusCode < 500 &&
			req.routeOptions.url?.endsWith("/:chain_id/v1/sql")
		) {
			const message = `the body was refused (${fe.message.toLowerCase()}): send one SQL statement of at most ${sqlLimits.maxLength} characters as text/plain, or as JSON {"sql": "..."}`;
			return reply.code(fe.statusCode).send(errorBody(fe.statusCode, "INVALID_BODY", message));
		}
		if (
			fe.code?.startsWith("FST_ERR_CTP_") &&
			fe.statusCode &&
			fe.statusCode < 500 &&
			req.routeOptions.url?.includes("/:chain_id/v1/hooks")
		) {
			const message = `the body was refused (${fe.message.toLowerCase()}): send the hook as JSON (content-type: application/json), as /docs shows`;
			return reply.code(fe.statusCode).send(errorBody(fe.statusCode, "INVALID_BODY", message));
		}
		if (fe.code?.startsWith("FST_ERR_CTP_") && fe.statusCode && fe.statusCode < 500) {
			const message = `this API takes no request body (${fe.message.toLowerCase()}): send GET requests, with every parameter in the query string; see /docs`;
			return reply.code(fe.statusCode).send(errorBody(fe.statusCode, "BODY_NOT_ACCEPTED", message));
		}
		if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
			return reply.code(fe.statusCode).send(errorBody(fe.statusCode, fe.code ?? "BAD_REQUEST", fe.message));
		}
		// The backstop behind the query budget: waiting for a free connection counts here too.
		if (fe.code === "FST_ERR_HANDLER_TIMEOUT") {
			req.log.warn({ route: req.routeOptions.url ?? null }, "request timed out");
			const message = `no answer within ${timeouts.handlerMs / 1000} s (the server is busy, or the request asks for a lot): retry later, or narrow the range or lower limit`;
			return reply.code(503).send(errorBody(503, "TIMEOUT", message));
		}
		// Not the error object: its stack and message can name files and quote SQL (errorSummary).
		req.log.error({ error: errorSummary(err) }, "request failed");
		return reply
			.code(500)
			.send(errorBody(500, "INTERNAL", `internal error; quote request id ${req.id} when reporting it`));
	});

	app.setNotFoundHandler((req, reply) => {
		reply
			.code(404)
			.send(errorBody(404, "NOT_FOUND", `no route ${req.method} ${req.url.split("?")[0]}; see /docs for the API`));
	});

	await app.register(
		async (scoped) => {
			healthRoutes(scoped, ctx, opts.dataDir);
			addressRoutes(scoped, ctx);
			txRoutes(scoped, ctx);
			blockRoutes(scoped, ctx);
			contractRoutes(scoped, ctx);
			eventRoutes(scoped, ctx);
			callRoutes(scoped, ctx);
			balancesRoutes(scoped, ctx);
			nftRoutes(scoped, ctx);
			sqlRoutes(scoped, ctx, { enabled: opts.sql?.enabled ?? false, limits: sqlLimits });
			hookRoutes(scoped, ctx, { policy: opts.hookPolicy ?? parseAllowHosts(DEFAULT_ALLOW_HOSTS), basePath: base });
		},
		{ prefix: base },
	);
	return app;
}

/** "limit: must be from 1 to 1000 (default 100); unknown parameter foo" from the schema's issues. */
function validationMessage(err: FastifyError & { validationContext?: string }, route?: string) {
	const issues = (err.validation ?? []) as {
		keyword?: string;
		instancePath?: string;
		message?: string;
		params?: { keys?: string[] };
	}[];
	const parts = issues.map((v) => {
		if (v.keyword === "unrecognized_keys") {
			const keys = v.params?.keys ?? [];
			return `unknown parameter${keys.length > 1 ? "s" : ""} ${keys.join(", ")}: see /docs for the parameters of ${route ?? "this route"}`;
		}
		const name = v.instancePath?.replace(/^\//, "").replaceAll("/", ".") || err.validationContext || "request";
		return `${name}: ${v.message ?? "is invalid"}`;
	});
	return parts.join("; ") || err.message;
}
