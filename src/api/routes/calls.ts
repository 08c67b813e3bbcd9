import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { findCalls } from "../../query/contracts.js";
import type { Row } from "../../query/store/store.js";
import { logsOfTransactions } from "../../query/transactions.js";
import { envelope, pageOf } from "../answers/list-reply.js";
import { CALL_COLUMNS, callEventRecord, callRecord, contextOf } from "../answers/records.js";
import { sendList } from "../answers/send-list.js";
import { type ApiContext, openChain } from "../context.js";
import { badRequest } from "../errors.js";
import { describedAs, documented } from "../params/param-docs.js";
import {
	addressList,
	addressParam,
	booleanParam,
	chainParams,
	EXAMPLE,
	listQuery,
	selectorList,
} from "../params/params.js";
import { resolveRange } from "../params/range.js";
import { requireTraces } from "./require-traces.js";

/*
 * GET /calls: trace frames by caller, callee, origin or selector, each with the events its
 * contract emitted when asked (include_events).
 */

const CALL_TYPES = ["call", "delegatecall", "staticcall", "callcode", "create", "create2"] as const;

export function callRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	r.get(
		"/:chain_id/v1/calls",
		{
			schema: {
				summary: "Calls (trace frames) by caller, callee, origin or selector",
				description:
					"Internal and top-level calls, creates and self-destructs from traces. At least one of contract (or to; the callee, a list), sender (or from; the caller), origin, sig_hash (4-byte selectors the call data starts with, a list). include_events=true adds each call's events: the logs of its transaction emitted as the contract the call ran as (none for a reverted call). Example: /eip155-1/v1/calls?contract=0x...&sig_hash=0xa9059cbb,0x23b872dd&include_events=true",
				tags: ["events"],
				params: chainParams,
				querystring: z
					.object({
						...listQuery,
						from: describedAs(addressParam, "Only calls this account made (the frame's caller).").optional(),
						sender: describedAs(addressParam, "Another name for `from`.").optional(),
						to: describedAs(addressParam, "Only calls to this address (the callee); with `contract`, to any of them.", {
							example: EXAMPLE.token,
						}).optional(),
						contract: describedAs(
							addressList,
							"Only calls to these addresses (the callees), comma-separated, at most 20.",
						).optional(),
						origin: describedAs(
							addressParam,
							"Only calls inside transactions sent by this address (their from).",
						).optional(),
						sig_hash: describedAs(
							selectorList,
							"Only calls whose input starts with one of these 4-byte function selectors (0x and 8 hex digits), comma-separated, at most 20.",
						).optional(),
						include_events: describedAs(
							booleanParam,
							"`true`: each call gets `events`, the logs its transaction emitted as the contract the call ran as (none for a reverted call).",
						).optional(),
						call_type: documented(
							z.enum(CALL_TYPES, {
								error: "must be call, delegatecall, staticcall, callcode, create or create2",
							}),
							{
								schema: { type: "string", enum: [...CALL_TYPES] },
								description: "Only frames of this kind. Default: all.",
								example: "delegatecall",
							},
						).optional(),
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			if (q.from && q.sender && q.from !== q.sender) {
				throw badRequest("INVALID_PARAMETER", "sender is another name for from: give one of them, or the same address");
			}
			const callees = [...(q.contract ?? []), ...(q.to ? [q.to] : [])];
			const caller = q.from ?? q.sender;
			if (!caller && callees.length === 0 && !q.origin && !q.sig_hash) {
				throw badRequest("MISSING_FILTER", "give at least one of contract (or to), sender (or from), origin, sig_hash");
			}
			requireTraces(db, "traces");
			const range = await resolveRange(db, q);
			const result = await findCalls(
				db,
				{ from: caller, to: callees, origin: q.origin, callType: q.call_type, selectors: q.sig_hash },
				pageOf(q, range),
			);
			if (!q.include_events) return sendList(reply, q.format, envelope(range, result, callRecord), CALL_COLUMNS);
			const logs = await logsOfTransactions(db, uniqueTransactions(result.rows));
			const withEvents = (call: Row) => ({
				...callRecord(call),
				// A reverted frame's logs were discarded with it: the receipt has none of them.
				events:
					Number(call.status) === 1
						? logs
								.filter((l) => l.transaction_hash === call.transaction_hash && l.address === contextOf(call))
								.map(callEventRecord)
						: [],
			});
			return sendList(reply, q.format, envelope(range, result, withEvents), [...CALL_COLUMNS, "events"]);
		},
	);
}

/** Each transaction of a page's rows once, for the logs of the page. */
function uniqueTransactions(rows: Row[]): Row[] {
	const seen = new Map<string, Row>();
	for (const r of rows) if (!seen.has(String(r.transaction_hash))) seen.set(String(r.transaction_hash), r);
	return [...seen.values()];
}
