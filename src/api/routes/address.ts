import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { findWalletTransactions, logsOfTransactions } from "../../query/transactions.js";
import { findTransfers } from "../../query/transfers.js";
import { envelope, pageOf } from "../answers/list-reply.js";
import {
	TRANSACTION_COLUMNS,
	TRANSACTION_WITH_LOGS_COLUMNS,
	TRANSFER_COLUMNS,
	transactionRecord,
	transferRecord,
} from "../answers/records.js";
import { sendList } from "../answers/send-list.js";
import { type ApiContext, openChain } from "../context.js";
import { badRequest } from "../errors.js";
import { describedAs, documented } from "../params/param-docs.js";
import { addressList, addressParam, assetTypes, booleanParam, CHAIN_ID, listQuery } from "../params/params.js";
import { resolveRange } from "../params/range.js";

const direction = (description: string) =>
	documented(z.enum(["incoming", "outgoing"], { error: "must be incoming or outgoing" }), {
		schema: { type: "string", enum: ["incoming", "outgoing"] },
		description,
		example: "outgoing",
	});

const pathParams = (address: string) =>
	z.object({
		chain_id: documented(z.string().regex(/^eip155-\d{1,16}$/, "must be eip155-<chain number>"), CHAIN_ID),
		address: describedAs(addressParam, address),
	});

export function addressRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	r.get(
		"/:chain_id/v1/address/:address/transfers",
		{
			schema: {
				summary: "Transfers of a wallet",
				description:
					"Native, ERC-20, ERC-721 and ERC-1155 transfers where the address is sender or recipient. asset_type defaults to ft. Example: /eip155-1/v1/address/0x.../transfers?asset_type=native,ft&block_number_start=-1000&block_number_end=latest&limit=100",
				tags: ["transfers"],
				params: pathParams("The wallet whose transfers are listed, as sender or recipient."),
				querystring: z
					.object({
						...listQuery,
						direction: direction(
							"`incoming`: transfers to the address (it is the recipient); `outgoing`: from it (the sender). Default: both.",
						).optional(),
						origin: describedAs(
							addressParam,
							"Only transfers inside transactions sent by this address (the transaction's from).",
						).optional(),
						counterparty: describedAs(
							addressParam,
							"Only transfers whose other side (the sender of an incoming one, the recipient of an outgoing one) is this address.",
						).optional(),
						asset_type: assetTypes("`ft`", { schema: { default: ["ft"] } }).optional(),
						contract: describedAs(
							addressList,
							"Only transfers of these token contracts, comma-separated, at most 20. Not with `asset_type=native` alone.",
						).optional(),
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const assets = q.asset_type ?? ["ft"];
			if (q.contract && assets.length === 1 && assets[0] === "native") {
				throw badRequest(
					"INVALID_PARAMETER",
					"contract filters token transfers; it cannot be combined with asset_type=native alone",
				);
			}
			const range = await resolveRange(db, q);
			const result = await findTransfers(
				db,
				{
					address: req.params.address,
					direction: q.direction,
					counterparty: q.counterparty,
					origin: q.origin,
					assets,
					contracts: q.contract,
				},
				pageOf(q, range),
			);
			return sendList(reply, q.format, envelope(range, result, transferRecord), TRANSFER_COLUMNS);
		},
	);

	r.get(
		"/:chain_id/v1/address/:address/txs",
		{
			schema: {
				summary: "Transactions of a wallet",
				description:
					"Transactions sent (outgoing) or received (incoming) by the address, optionally with their logs. Example: /eip155-1/v1/address/0x.../txs?direction=outgoing&include_logs=true&limit=100",
				tags: ["transactions"],
				params: pathParams("The wallet whose transactions are listed, as sender (from) or recipient (to)."),
				querystring: z
					.object({
						...listQuery,
						direction: direction(
							"`outgoing`: transactions the address sent (it is from); `incoming`: sent to it (it is to). Default: both.",
						).optional(),
						counterparty: describedAs(
							addressParam,
							"Only transactions whose other side (to of an outgoing one, from of an incoming one) is this address.",
						).optional(),
						include_logs: describedAs(
							booleanParam,
							"`true`: each transaction with its receipt's logs, in order.",
						).optional(),
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const range = await resolveRange(db, q);
			const result = await findWalletTransactions(
				db,
				{ address: req.params.address, direction: q.direction, counterparty: q.counterparty },
				pageOf(q, range),
			);
			if (!q.include_logs)
				return sendList(
					reply,
					q.format,
					envelope(range, result, (row) => transactionRecord(row)),
					TRANSACTION_COLUMNS,
				);
			const logs = await logsOfTransactions(db, result.rows);
			const byTx = new Map<string, typeof logs>();
			for (const l of logs)
				byTx.set(l.transaction_hash as string, [...(byTx.get(l.transaction_hash as string) ?? []), l]);
			return sendList(
				reply,
				q.format,
				envelope(range, result, (row) => transactionRecord(row, byTx.get(row.transaction_hash as string) ?? [])),
				TRANSACTION_WITH_LOGS_COLUMNS,
			);
		},
	);
}
