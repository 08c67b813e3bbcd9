import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { findTransaction, logsOfTransactions } from "../../query/transactions.js";
import { type ApiContext, servedChain } from "../context.js";
import { notFound } from "../errors.js";
import { chainParams, hashParam } from "../params.js";
import { transactionRecord } from "../records.js";

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

	// The original service answers this route with the transaction and its logs (the official
	// clients' getTransactionWithLogs reads it so), not with a list envelope.
	r.get(
		"/:chain_id/v1/txs/:transaction_hash/logs",
		{
			schema: {
				summary: "Transaction with its logs",
				description:
					"The transaction (as /txs/{hash}) with the receipt's logs in order. Example: /eip155-1/v1/txs/0x<64 hex digits>/logs",
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
}
