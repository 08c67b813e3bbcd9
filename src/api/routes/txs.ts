import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { findTransaction, logsOfTransactions } from "../../query/transactions.js";
import { type ApiContext, openChain } from "../context.js";
import { notFound } from "../errors.js";
import { describedAs } from "../param-docs.js";
import { chainParams, hashParam } from "../params.js";
import { transactionRecord } from "../records.js";

const txParams = chainParams.extend({ transaction_hash: describedAs(hashParam, "The transaction's hash.") });

export function txRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	// `/txs/{hash}/logs` answers like `/txs/{hash}`: the original service returns the transaction
	// with its logs there (the official clients' getTransactionWithLogs reads it so), not a list.
	for (const [suffix, summary] of [
		["", "Transaction by hash, with its logs"],
		["/logs", "Transaction with its logs (as /txs/{hash})"],
	] as const) {
		r.get(
			`/:chain_id/v1/txs/:transaction_hash${suffix}`,
			{
				schema: {
					summary,
					description: `The transaction with its receipt fields and the receipt's logs in order. Example: /eip155-1/v1/txs/0x<64 hex digits>${suffix}`,
					tags: ["transactions"],
					params: txParams,
					querystring: z.object({}).strict(),
				},
			},
			async (req) => {
				const db = openChain(ctx, req.params.chain_id);
				const chain = db.chain;
				const tx = await findTransaction(db, req.params.transaction_hash);
				if (!tx) throw notFound("TX_NOT_FOUND", `no transaction ${req.params.transaction_hash} on ${chain}`);
				return transactionRecord(tx, await logsOfTransactions(db, [tx]));
			},
		);
	}
}
