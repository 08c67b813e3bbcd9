import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { findCreations, findSelfDestructs } from "../../query/contracts.js";
import { findTransfers } from "../../query/transfers.js";
import { envelope, pageOf } from "../answers/list-reply.js";
import {
	CREATION_COLUMNS,
	creationRecord,
	SELF_DESTRUCT_COLUMNS,
	selfDestructRecord,
	TRANSFER_COLUMNS,
	transferRecord,
} from "../answers/records.js";
import { sendList } from "../answers/send-list.js";
import { type ApiContext, openChain } from "../context.js";
import { badRequest } from "../errors.js";
import { describedAs } from "../params/param-docs.js";
import { addressList, addressParam, assetTypes, chainParams, EXAMPLE, listQuery } from "../params/params.js";
import { resolveRange } from "../params/range.js";
import { requireTraces } from "./require-traces.js";

/*
 * Contracts' lives and tokens' moves: GET /contracts/creates and /contracts/self-destructs (from
 * traces), and /contract/{contract}/transfers. Logs are in events.ts, calls in calls.ts.
 */

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
				const db = openChain(ctx, req);
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
			const db = openChain(ctx, req);
			const range = await resolveRange(db, req.query);
			const result = await findTransfers(
				db,
				{ token: req.params.contract, assets: req.query.asset_type },
				pageOf(req.query, range),
			);
			return sendList(reply, req.query.format, envelope(range, result, transferRecord), TRANSFER_COLUMNS);
		},
	);
}
