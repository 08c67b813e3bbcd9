import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { type ApiContext, servedChain } from "../context.js";
import { badRequest, notFound } from "../errors.js";
import { destinationProblem, type HostPolicy, resolvedProblem } from "../hooks/destinations.js";
import {
	type HookDef,
	listHooks,
	newHookId,
	readHook,
	readState,
	removeHook,
	replaceHook,
	writeHook,
} from "../hooks/hook-files.js";
import { feedQuery } from "../hooks/hook-worker.js";
import { checkFeed } from "../live/feed-plan.js";
import { chainParams, EXAMPLE } from "../params/params.js";
import { hookBody, hookParams, hookView, noQuery, replayBody, routeOf } from "./hook-requests.js";

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
