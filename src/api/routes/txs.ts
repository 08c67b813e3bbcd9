import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { callsOfTransaction } from "../../query/contracts.js";
import { findTransactionWithLogs } from "../../query/transactions.js";
import { internalCallRecord, logRecord, transactionRecord } from "../answers/records.js";
import { type ApiContext, openChain } from "../context.js";
import { notFound } from "../errors.js";
import { immutableUpTo } from "../http-cache.js";
import { describedAs } from "../params/param-docs.js";
import { booleanParam, chainParams, hashParam } from "../params/params.js";
import { requireTraces } from "./require-traces.js";

const txParams = chainParams.extend({ transaction_hash: describedAs(hashParam, "The transaction's hash.") });

export function txRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	r.get(
		"/:chain_id/v1/txs/:transaction_hash",
		{
			schema: {
				summary: "Transaction by hash, with its logs",
				description:
					"The transaction with its receipt fields and the receipt's logs in order. Example: /eip155-1/v1/txs/0x<64 hex digits>",
				tags: ["transactions"],
				params: txParams,
				querystring: z.object({}).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const found = await findTransactionWithLogs(db, req.params.transaction_hash);
			if (!found) throw notFound("TX_NOT_FOUND", `no transaction ${req.params.transaction_hash} on ${db.chain}`);
			immutableUpTo(reply, Number(found.tx.block_number));
			return transactionRecord(found.tx, found.logs);
		},
	);

	// The official clients' getTransactionInternals: the transaction with its internals in
	// `logs`, as the original service answers it: the call frames (op_code CALL, STATICCALL,
	// DELEGATECALL, CALLCODE, CREATE, CREATE2, SELFDESTRUCT) then the receipt's logs (LOG0..LOG4).
	r.get(
		"/:chain_id/v1/txs/:transaction_hash/logs",
		{
			schema: {
				summary: "Transaction internals: its calls and its logs",
				description:
					"The transaction as /txs/{hash}, its `logs` holding first its call frames from traces in execution order (depth first; the top-level call included), then the receipt's logs in order. Reverted frames (a failed transaction's, or a call that reverted inside a successful one) only with include_failed_calls=true (default false). A chain exported without traces lists the logs alone (include_failed_calls=true then answers 503 TRACES_UNAVAILABLE). Example: /eip155-1/v1/txs/0x<64 hex digits>/logs?include_failed_calls=true",
				tags: ["transactions"],
				params: txParams,
				querystring: z
					.object({
						include_failed_calls: describedAs(
							booleanParam,
							"`true`: list the frames that reverted too (`status: false`). Default `false`.",
						).optional(),
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const includeFailed = req.query.include_failed_calls ?? false;
			if (includeFailed) requireTraces(db, "traces");
			const found = await findTransactionWithLogs(db, req.params.transaction_hash);
			if (!found) throw notFound("TX_NOT_FOUND", `no transaction ${req.params.transaction_hash} on ${db.chain}`);
			const { tx, logs } = found;
			immutableUpTo(reply, Number(tx.block_number));
			const calls = db.hasDataset("traces") ? await callsOfTransaction(db, tx, includeFailed) : [];
			return Object.assign(transactionRecord(tx), { logs: [...calls.map(internalCallRecord), ...logs.map(logRecord)] });
		},
	);
}
