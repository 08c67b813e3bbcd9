import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { DatasetName } from "../../extract/rows.js";
import { findCalls, findCreations, findSelfDestructs } from "../../query/contracts.js";
import type { Snapshot } from "../../query/store.js";
import { findEvents } from "../../query/transactions.js";
import { findTransfers } from "../../query/transfers.js";
import { type ApiContext, openChain } from "../context.js";
import { ApiError, badRequest } from "../errors.js";
import { envelope, pageOf } from "../list-reply.js";
import { describedAs, documented } from "../param-docs.js";
import { addressList, addressParam, assetTypes, chainParams, EXAMPLE, hashList, listQuery } from "../params.js";
import { resolveRange } from "../range.js";
import {
	CALL_COLUMNS,
	CREATION_COLUMNS,
	callRecord,
	creationRecord,
	LOG_COLUMNS,
	logRecord,
	SELF_DESTRUCT_COLUMNS,
	selfDestructRecord,
	TRANSFER_COLUMNS,
	transferRecord,
} from "../records.js";
import { sendList } from "../send-list.js";

const contractQuery = z
	.object({
		...listQuery,
		origin: describedAs(
			addressParam,
			"Only those inside transactions sent by this address (the transaction's from).",
		).optional(),
		caller: describedAs(
			addressParam,
			"Only those this account executed: the CREATE or CREATE2 (the sender, for a deploying transaction), or the call that self-destructed the contract.",
		).optional(),
		sender: describedAs(addressParam, "Another name for `caller`.").optional(),
		contract: describedAs(
			addressList,
			"Only these contracts (created, or destroyed), comma-separated, at most 20.",
		).optional(),
	})
	.strict();

const CALL_TYPES = ["call", "delegatecall", "staticcall", "callcode", "create", "create2"] as const;

/** topic_1..3 of /events: an indexed argument, 32 bytes (an address left-padded with zeros). */
const topicList = (n: number) =>
	describedAs(
		hashList,
		`Only logs whose topic ${n} (an indexed argument) is one of these, comma-separated, at most 20.`,
		{
			example: [`0x000000000000000000000000${EXAMPLE.wallet.slice(2)}`],
		},
	).optional();

/** Trace-only datasets are absent (not empty) for chains exported without traces: say so. */
function requireTraces(db: Snapshot, dataset: DatasetName) {
	const chain = db.chain;
	if (!db.hasDataset(dataset)) {
		throw new ApiError(
			503,
			"TRACES_UNAVAILABLE",
			`${chain} was exported without traces, so ${dataset} is unavailable; backfill it from a node with trace_block or debug_traceBlockByNumber`,
		);
	}
}

export function contractRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	for (const [path, dataset, find, record, columns, summary] of [
		["creates", "contract_creations", findCreations, creationRecord, CREATION_COLUMNS, "Contract creations"],
		[
			"self-destructs",
			"self_destructs",
			findSelfDestructs,
			selfDestructRecord,
			SELF_DESTRUCT_COLUMNS,
			"Contract self-destructs",
		],
	] as const) {
		r.get(
			`/:chain_id/v1/contracts/${path}`,
			{
				schema: {
					summary,
					description: `At least one of origin, caller (or its alias sender), contract. Example: /eip155-1/v1/contracts/${path}?caller=0x...&limit=100`,
					tags: ["contracts"],
					params: chainParams,
					querystring: contractQuery,
				},
			},
			async (req, reply) => {
				const db = openChain(ctx, req.params.chain_id);
				const q = req.query;
				if (q.caller && q.sender && q.caller !== q.sender) {
					throw badRequest(
						"INVALID_PARAMETER",
						"sender is another name for caller: give one of them, or the same address",
					);
				}
				const caller = q.caller ?? q.sender;
				if (!q.origin && !caller && !q.contract) {
					throw badRequest("MISSING_FILTER", "give at least one of origin, caller (or sender), contract");
				}
				requireTraces(db, dataset);
				const range = await resolveRange(db, q);
				const result = await find(db, { origin: q.origin, caller, contracts: q.contract }, pageOf(q, range));
				return sendList(reply, q.format, envelope<object>(range, result, record), columns);
			},
		);
	}

	r.get(
		"/:chain_id/v1/contract/:contract/transfers",
		{
			schema: {
				summary: "Transfers of a token contract",
				description:
					"Every transfer of the token (all asset types unless asset_type is given). Example: /eip155-1/v1/contract/0x.../transfers?limit=100",
				tags: ["transfers"],
				params: chainParams.extend({
					contract: describedAs(addressParam, "The token contract.", { example: EXAMPLE.token }),
				}),
				querystring: z
					.object({
						...listQuery,
						asset_type: assetTypes("all of them", { example: ["ft"] }).optional(),
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req.params.chain_id);
			const range = await resolveRange(db, req.query);
			const result = await findTransfers(
				db,
				{ token: req.params.contract, assets: req.query.asset_type },
				pageOf(req.query, range),
			);
			return sendList(reply, req.query.format, envelope(range, result, transferRecord), TRANSFER_COLUMNS);
		},
	);

	r.get(
		"/:chain_id/v1/events",
		{
			schema: {
				summary: "Logs by contract, topics or origin",
				description:
					"At least one of contract, topic_0, origin; contract and topic_0..3 take comma-separated lists. Example: /eip155-1/v1/events?contract=0x...&topic_0=0xddf252ad...",
				tags: ["events"],
				params: chainParams,
				querystring: z
					.object({
						...listQuery,
						contract: describedAs(
							addressList,
							"Only logs these contracts emitted, comma-separated, at most 20.",
						).optional(),
						origin: describedAs(
							addressParam,
							"Only logs of transactions sent by this address (their from).",
						).optional(),
						topic_0: describedAs(
							hashList,
							"Only logs whose topic 0 (the event's signature hash) is one of these, comma-separated, at most 20.",
						).optional(),
						topic_1: topicList(1),
						topic_2: topicList(2),
						topic_3: topicList(3),
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req.params.chain_id);
			const q = req.query;
			if (!q.contract && !q.topic_0 && !q.origin) {
				throw badRequest("MISSING_FILTER", "give at least one of contract, topic_0, origin");
			}
			const range = await resolveRange(db, q);
			const result = await findEvents(
				db,
				{ contracts: q.contract, origin: q.origin, topics: [q.topic_0, q.topic_1, q.topic_2, q.topic_3] },
				pageOf(q, range),
			);
			return sendList(reply, q.format, envelope(range, result, logRecord), LOG_COLUMNS);
		},
	);

	r.get(
		"/:chain_id/v1/calls",
		{
			schema: {
				summary: "Calls (trace frames) by caller, callee or origin",
				description:
					"Internal and top-level calls, creates and self-destructs from traces. At least one of contract (or to; the callee, a list), sender (or from; the caller), origin. sig_hash filters by the 4-byte selector. Example: /eip155-1/v1/calls?contract=0x...&sig_hash=0xa9059cbb",
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
						sig_hash: documented(
							z
								.string({ error: "must be a 4-byte selector, e.g. 0xa9059cbb" })
								.regex(/^0x[0-9a-fA-F]{8}$/, "must be a 4-byte selector, e.g. 0xa9059cbb")
								.transform((v) => v.toLowerCase()),
							{
								schema: { type: "string", pattern: "^0x[0-9a-fA-F]{8}$" },
								description: "Only calls whose input starts with this 4-byte function selector: 0x and 8 hex digits.",
								example: "0xa9059cbb",
							},
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
			const db = openChain(ctx, req.params.chain_id);
			const q = req.query;
			if (q.from && q.sender && q.from !== q.sender) {
				throw badRequest("INVALID_PARAMETER", "sender is another name for from: give one of them, or the same address");
			}
			const callees = [...(q.contract ?? []), ...(q.to ? [q.to] : [])];
			const caller = q.from ?? q.sender;
			if (!caller && callees.length === 0 && !q.origin) {
				throw badRequest("MISSING_FILTER", "give at least one of contract (or to), sender (or from), origin");
			}
			requireTraces(db, "traces");
			const range = await resolveRange(db, q);
			const result = await findCalls(
				db,
				{ from: caller, to: callees, origin: q.origin, callType: q.call_type, selector: q.sig_hash },
				pageOf(q, range),
			);
			return sendList(reply, q.format, envelope(range, result, callRecord), CALL_COLUMNS);
		},
	);
}
