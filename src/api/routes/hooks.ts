import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { type ApiContext, servedChain } from "../context.js";
import { badRequest, notFound } from "../errors.js";
import { destinationProblem, type HostPolicy, resolvedProblem } from "../hooks/destinations.js";
import {
	HOOK_ID,
	type HookDef,
	type HookState,
	listHooks,
	newHookId,
	readHook,
	readState,
	removeHook,
	replaceHook,
	writeHook,
} from "../hooks/hook-files.js";
import { feedQuery } from "../hooks/hook-worker.js";
import { checkFeed } from "../live/feed.js";
import { STREAM_ROUTES } from "../live/streams.js";
import { documented } from "../params/param-docs.js";
import { chainParams, EXAMPLE } from "../params/params.js";

/*
 * Webhooks (api-contract.md "Webhooks"): a key makes a hook on a list route's query; the process
 * that delivers the chain's hooks (hooks/hook-delivery.ts) POSTs its feed's events to the URL in
 * signed batches. Each key sees, replays and deletes only its own hooks; another key's is a 404.
 */

export interface HookRouteOptions {
	/** Where deliveries may go (--hook-allow-hosts, hooks/destinations.ts). */
	policy: HostPolicy;
	/** The base path the API is served under, which a hook's path may start with. */
	basePath: string;
}

/** Hooks one key may have on one chain. */
export const MAX_HOOKS_PER_KEY = 100;

/** The list routes (those that stream), as patterns of a path. */
const LIST_ROUTES = STREAM_ROUTES.map((r) => new RegExp(`^${r.replace(/:\w+/g, "[^/]+")}/?$`));

/** Parameters a hook's query may not carry: the deliveries decide paging, order and format. */
const RESERVED = ["offset", "order", "format", "cursor", "limit", "batchSize"];

const hookParams = chainParams.extend({
	hook_id: documented(z.string().regex(HOOK_ID, "must be a hook id: 16 hex digits, as POST /hooks answered"), {
		schema: { type: "string", pattern: HOOK_ID.source },
		description: "A hook's id, as POST /{chain_id}/v1/hooks answered it.",
		example: "3f2a9c0d5e6b7a81",
	}),
});

const fromBlock = z
	.number({ error: "must be a block number: a whole number from 0" })
	.int("must be a whole number")
	.min(0, "must be 0 or more")
	.max(999_999_999_999_999, "must be at most 999999999999999");

const hookBody = z
	.object(
		{
			path: z
				.string({ error: "must be a list route's path, e.g. /eip155-1/v1/address/0x.../transfers" })
				.min(1)
				.max(1000)
				.describe(
					"A list route's path, with or without its query string. Example: /eip155-1/v1/address/0x.../transfers",
				),
			query: z
				.record(
					z.string(),
					z.union([z.string(), z.number(), z.boolean()], {
						error: "must be one value (a string, number or boolean); a list's values go comma-separated in one string",
					}),
					{
						error: 'must be an object of the list route\'s query parameters, e.g. {"asset_type": "native,ft"}',
					},
				)
				.optional()
				.describe('The list route\'s query parameters (besides any in path), e.g. {"asset_type": "native,ft"}.'),
			url: z
				.string({ error: "must be the destination URL (https://...)" })
				.max(2000, "must be at most 2000 characters")
				.describe("Where the batches are POSTed: http(s), a host the server's --hook-allow-hosts allows."),
			secret: z
				.string({ error: "must be a string of 16 to 256 characters" })
				.min(16, "must be at least 16 characters (it signs every delivery)")
				.max(256, "must be at most 256 characters")
				// Signed as UTF-8: a lone surrogate would be signed as U+FFFD, a key the receiver does not
				// hold; control characters are most often a copy-paste accident (a newline, a NUL).
				.refine((v) => Buffer.from(v, "utf8").toString("utf8") === v && ![...v].some((c) => c < " " || c === "\x7f"), {
					message: "must be printable text (no control characters such as newlines, and valid Unicode)",
				})
				.describe("Signs every delivery (HMAC-SHA256); never answered back."),
			confirmations: z
				.number({ error: "must be a whole number from 0 to 64" })
				.int("must be a whole number from 0 to 64")
				.min(0, "must be from 0 to 64")
				.max(64, "must be from 0 to 64")
				.default(0)
				.describe("Items only from blocks at least this deep (0: as soon as stored)."),
			from_block: fromBlock.optional().describe("Deliver from this block (default: the query's own start, else 0)."),
		},
		{
			error:
				'must be a JSON object {"path", "query", "url", "secret", "confirmations", "from_block"} sent as application/json',
		},
	)
	.strict();

/** The webhook routes take no query parameters (a hook's own query is in its body). */
const noQuery = z.object({}).strict();

const replayBody = z
	.object(
		{ from_block: fromBlock.describe("Deliver again from this block.") },
		{
			error: 'must be a JSON object {"from_block": n} sent as application/json',
		},
	)
	.strict();

/** What a client sees of a hook: never its secret nor its owner's key hash. */
function hookView(def: HookDef, state: HookState | null) {
	const { secret: _secret, owner: _owner, generation: _generation, ...shown } = def;
	const current = state && state.generation === def.generation ? state : null;
	return {
		...shown,
		delivery: {
			status: current?.status ?? "pending",
			cursor: current?.cursor ?? null,
			last_delivered_block: current?.last_delivered_block ?? null,
			last_delivered_at: current?.last_delivered_at ?? null,
			delivered_events: current?.delivered_events ?? 0,
			attempts: current?.attempts ?? 0,
			last_error: current?.last_error ?? null,
			last_error_at: current?.last_error_at ?? null,
			failing_since: current?.failing_since ?? null,
			next_attempt_at: current?.next_attempt_at ?? null,
		},
	};
}

/** The path and query of a hook's list route, checked for this chain (the feed checks the rest). */
function routeOf(chain: string, basePath: string, path: string, given: Record<string, unknown> | undefined) {
	const [rawPath, search] = path.split("?", 2) as [string, string | undefined];
	let bare = rawPath;
	if (basePath && bare.startsWith(`${basePath}/`)) bare = bare.slice(basePath.length);
	// The feed asks this path of the route in process: a '#' would cut it short, a '..' segment or
	// a percent-escape would lead elsewhere. A list route's path never has them.
	if (!/^(\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+\/?$/.test(bare) || bare.split("/").some((seg) => seg === ".."))
		throw badRequest(
			"INVALID_HOOK_PATH",
			`path ${JSON.stringify(rawPath.slice(0, 200))} has characters no list route's path has (only letters, digits and - . _ ~ between slashes, no '..', '#' or '%'): give the route's path as /docs shows it, its parameters in query`,
		);
	if (!bare.startsWith(`/${chain}/v1/`))
		throw badRequest(
			"INVALID_HOOK_PATH",
			`path ${JSON.stringify(rawPath.slice(0, 200))} is not a route of ${chain}: give a list route's path, e.g. /${chain}/v1/address/${EXAMPLE.wallet}/transfers`,
		);
	if (!LIST_ROUTES.some((re) => re.test(bare)))
		throw badRequest(
			"INVALID_HOOK_PATH",
			`path ${JSON.stringify(bare.slice(0, 200))} is not a list route: a hook takes one of ${STREAM_ROUTES.map((r) => r.replace(/:(\w+)/g, "{$1}")).join(", ")}`,
		);
	// No prototype: a parameter named constructor or __proto__ is a parameter (the route refuses it), not a clash.
	const query: Record<string, string> = Object.create(null);
	for (const [k, v] of new URLSearchParams(search ?? "")) {
		if (Object.hasOwn(query, k))
			throw badRequest("INVALID_HOOK_QUERY", `query parameter ${k} is given twice: give it once`);
		query[k] = v;
	}
	for (const [k, v] of Object.entries(given ?? {})) {
		if (Object.hasOwn(query, k))
			throw badRequest("INVALID_HOOK_QUERY", `query parameter ${k} is both in path and in query: give it once`);
		query[k] = String(v);
	}
	for (const k of ["confirmations", "from_block"])
		if (Object.hasOwn(query, k))
			throw badRequest(
				"INVALID_HOOK_QUERY",
				`${k} is the hook's own field, not a parameter of its query: give it beside path, url and secret`,
			);
	const reserved = RESERVED.filter((k) => Object.hasOwn(query, k));
	if (reserved.length > 0)
		throw badRequest(
			"INVALID_HOOK_QUERY",
			`a hook cannot take ${reserved.join(", ")}: it delivers every item of the query in chain order, in batches, from its start (set from_block for another start)`,
		);
	return { path: bare, query: { ...query } };
}

export function hookRoutes(app: FastifyInstance, ctx: ApiContext, opts: HookRouteOptions) {
	const r = app.withTypeProvider<ZodTypeProvider>();
	const base = "/:chain_id/v1/hooks";
	/** The caller's hook, or 404 (also for another key's: whether it exists is not told). */
	const ownHook = (chain: string, id: string, caller: string) => {
		const def = readHook(ctx.dataDir, servedChain(ctx, chain), id);
		if (!def || def.owner !== caller)
			throw notFound("HOOK_NOT_FOUND", `no hook ${id} of this API key on ${chain}: GET /${chain}/v1/hooks lists them`);
		return def;
	};
	/** The feed's own check of the hook's query, as the list route would answer it (400 naming the problem). */
	const checkQuery = (def: HookDef, authorization: string | undefined) =>
		checkFeed(app, {
			chain: def.chain,
			// Asked of the route in process: under the base path the routes are registered at.
			path: `${opts.basePath}${def.path}`,
			query: feedQuery(def),
			headers: authorization ? { authorization } : {},
			confirmations: def.confirmations,
		});

	r.post(
		base,
		{
			bodyLimit: 16 * 1024,
			schema: {
				summary: "Make a webhook on a list route's query",
				description: `Deliveries POST batches of the query's events (items, and reorgs that retract items) to url, signed with secret (X-Chainlake-Signature: sha256=HMAC-SHA256(secret, timestamp + "." + body), X-Chainlake-Timestamp), in chain order from from_block (or the query's start) into the live head, retried with backoff until a 2xx. Example: curl -X POST -H "Authorization: Bearer $KEY" -H "content-type: application/json" -d '{"path": "/eip155-1/v1/address/${EXAMPLE.wallet}/transfers", "query": {"asset_type": "native,ft"}, "url": "https://hooks.example.com/chainlake", "secret": "a-long-random-secret", "confirmations": 12}' https://host/eip155-1/v1/hooks`,
				tags: ["webhooks"],
				params: chainParams,
				querystring: noQuery,
				body: hookBody,
			},
		},
		async (req, reply) => {
			const chain = servedChain(ctx, req.params.chain_id);
			const b = req.body;
			const { path, query } = routeOf(chain, opts.basePath, b.path, b.query);
			const dest = destinationProblem(b.url, opts.policy);
			if ("problem" in dest) throw badRequest("HOOK_URL_REFUSED", dest.problem);
			const resolved = await resolvedProblem(dest.url, opts.policy);
			if (resolved) throw badRequest("HOOK_URL_REFUSED", resolved);
			const own = () => listHooks(ctx.dataDir, chain).filter((h) => h.owner === req.caller).length;
			const tooMany = () =>
				badRequest(
					"TOO_MANY_HOOKS",
					`this API key has ${MAX_HOOKS_PER_KEY} hooks on ${chain}, the most one key may have: delete one first`,
				);
			if (own() >= MAX_HOOKS_PER_KEY) throw tooMany();
			const def: HookDef = {
				id: newHookId(),
				chain,
				owner: req.caller,
				path,
				query,
				url: dest.url.href,
				secret: b.secret,
				confirmations: b.confirmations,
				from_block: b.from_block ?? null,
				created_at: new Date().toISOString(),
				generation: 1,
				replayed_at: null,
			};
			await checkQuery(def, req.headers.authorization);
			// Counted again right before the rename (synchronously: no other request of this process
			// in between), so hooks made at once cannot all pass the count above and overshoot it.
			if (!(await writeHook(ctx.dataDir, def, () => own() < MAX_HOOKS_PER_KEY))) throw tooMany();
			return reply
				.code(201)
				.header("Location", `${opts.basePath}/${chain}/v1/hooks/${def.id}`)
				.send(hookView(def, null));
		},
	);

	r.get(
		base,
		{
			schema: {
				summary: "This key's webhooks, with their delivery state",
				description: "Every hook this API key made on the chain, oldest first. Example: /eip155-1/v1/hooks",
				tags: ["webhooks"],
				params: chainParams,
				querystring: noQuery,
			},
		},
		async (req) => {
			const chain = servedChain(ctx, req.params.chain_id);
			const items = listHooks(ctx.dataDir, chain)
				.filter((h) => h.owner === req.caller)
				.map((h) => hookView(h, readState(ctx.dataDir, chain, h.id)));
			return { items };
		},
	);

	r.get(
		`${base}/:hook_id`,
		{
			schema: {
				summary: "One webhook and its delivery state",
				description:
					"delivery: status (pending, active, failing, completed, paused), cursor, last_delivered_block, attempts of the pending batch, last_error, failing_since, next_attempt_at. Example: /eip155-1/v1/hooks/3f2a9c0d5e6b7a81",
				tags: ["webhooks"],
				params: hookParams,
				querystring: noQuery,
			},
		},
		async (req) => {
			const def = ownHook(req.params.chain_id, req.params.hook_id, req.caller);
			return hookView(def, readState(ctx.dataDir, def.chain, def.id));
		},
	);

	r.delete(
		`${base}/:hook_id`,
		{
			schema: {
				summary: "Delete a webhook",
				description:
					"Deliveries stop (a batch under way may still arrive once). Example: /eip155-1/v1/hooks/3f2a9c0d5e6b7a81",
				tags: ["webhooks"],
				params: hookParams,
				querystring: noQuery,
			},
		},
		async (req, reply) => {
			const def = ownHook(req.params.chain_id, req.params.hook_id, req.caller);
			await removeHook(ctx.dataDir, def.chain, def.id);
			return reply.code(204).send();
		},
	);

	r.post(
		`${base}/:hook_id/replay`,
		{
			bodyLimit: 1024,
			schema: {
				summary: "Deliver a webhook's events again from a block",
				description:
					"The hook's deliveries start over from from_block (its cursor is dropped): every item of the query from that block, then live. Example: curl -X POST -d '{\"from_block\": 100}' /eip155-1/v1/hooks/3f2a9c0d5e6b7a81/replay",
				tags: ["webhooks"],
				params: hookParams,
				querystring: noQuery,
				body: replayBody,
			},
		},
		async (req, reply) => {
			let def = ownHook(req.params.chain_id, req.params.hook_id, req.caller);
			const replay = (d: HookDef): HookDef => ({
				...d,
				from_block: req.body.from_block,
				generation: d.generation + 1,
				replayed_at: new Date().toISOString(),
			});
			await checkQuery(replay(def), req.headers.authorization);
			// Written only over the hook as read: deleted meanwhile, it stays deleted (404); replayed
			// meanwhile by another request, this one goes on top of it (the last replay wins).
			for (let tries = 0; ; tries++) {
				const replayed = replay(def);
				const outcome = await replaceHook(ctx.dataDir, replayed);
				if (outcome === "replaced") return reply.code(202).send(hookView(replayed, null));
				if (outcome === "gone" || tries >= 20) break;
				def = ownHook(req.params.chain_id, req.params.hook_id, req.caller);
			}
			throw notFound(
				"HOOK_NOT_FOUND",
				`hook ${def.id} was deleted (or replayed many times) while this replay ran: GET /${def.chain}/v1/hooks lists the hooks`,
			);
		},
	);
}
