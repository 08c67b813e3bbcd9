import { z } from "zod";
import { badRequest } from "../errors.js";
import { HOOK_ID, type HookDef, type HookState } from "../hooks/hook-files.js";
import { STREAM_ROUTES } from "../live/streams.js";
import { documented } from "../params/param-docs.js";
import { chainParams, EXAMPLE } from "../params/params.js";

/*
 * What the webhook routes (hooks.ts) take and answer: the schemas of their parameters and
 * bodies, the list route a hook follows (its path and query, checked), and what a client sees
 * of a hook. Apart from the handlers because the checks of a hook's query grow with each list
 * route, and the handlers are about files, keys and the delivering process.
 */

/** The list routes (those that stream), as patterns of a path. */
const LIST_ROUTES = STREAM_ROUTES.map((r) => new RegExp(`^${r.replace(/:\w+/g, "[^/]+")}/?$`));

/** Parameters a hook's query may not carry: the deliveries decide paging, order and format. */
const RESERVED = ["offset", "order", "format", "cursor", "limit", "batchSize"];

export const hookParams = chainParams.extend({
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

export const hookBody = z
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
export const noQuery = z.object({}).strict();

export const replayBody = z
	.object(
		{ from_block: fromBlock.describe("Deliver again from this block.") },
		{
			error: 'must be a JSON object {"from_block": n} sent as application/json',
		},
	)
	.strict();

/** What a client sees of a hook: never its secret nor its owner's key hash. */
export function hookView(def: HookDef, state: HookState | null) {
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
export function routeOf(chain: string, basePath: string, path: string, given: Record<string, unknown> | undefined) {
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
