import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { findEvents, findTransaction, logsOfTransactions } from "../../query/transactions.js";
import { type ApiContext, servedChain } from "../context.js";
import { notFound } from "../errors.js";
import { envelope, pageOf } from "../list-reply.js";
import { chainParams, hashParam, listQuery } from "../params.js";
import { logRecord, transactionRecord } from "../records.js";
import { sendList } from "../send-list.js";

const txParams = chainParams.extend({ transaction_hash: hashParam });

export function txRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	r.get(
		"/:chain_id/v1/txs/:transaction_hash",
		{
			schema: {
				summary: "Transaction by hash",
				description: "One transaction with its receipt fields and logs. Example: /eip155-1/v1/txs/0x<64 hex digits>",
				tags: ["transactions"],
				params: txParams,
				querystring: z.object({}).strict(),
			},
		},
		async (req) => {
			const chain = servedChain(ctx, req.params.chain_id);
			const tx = await findTransaction(ctx.store, chain, req.params.transaction_hash);
			if (!tx) throw notFound("TX_NOT_FOUND", `no transaction ${req.params.transaction_hash} on ${chain}`);
			return transactionRecord(tx, await logsOfTransactions(ctx.store, chain, [tx]));
		},
	);

	r.get(
		"/:chain_id/v1/txs/:transaction_hash/logs",
		{
			schema: {
				summary: "Logs of a transaction",
				description: "The receipt's logs in order, as a list. Example: /eip155-1/v1/txs/0x<64 hex digits>/logs",
				tags: ["transactions"],
				params: txParams,
				querystring: z
					.object({
						limit: listQuery.limit,
						offset: listQuery.offset,
						order: listQuery.order,
						format: listQuery.format,
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const chain = servedChain(ctx, req.params.chain_id);
			const tx = await findTransaction(ctx.store, chain, req.params.transaction_hash);
			if (!tx) throw notFound("TX_NOT_FOUND", `no transaction ${req.params.transaction_hash} on ${chain}`);
			const block = Number(tx.block_number);
			const range = { start: block, end: block };
			const result = await findEvents(
				ctx.store,
				chain,
				{ topics: [], transaction: req.params.transaction_hash },
				pageOf(req.query, range),
			);
			return sendList(reply, req.query.format, envelope(range, result, logRecord));
		},
	);
}
