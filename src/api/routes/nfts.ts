import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { deltaSums } from "../../query/deltas.js";
import { ZERO_ADDRESS } from "../../query/holders.js";
import { arrivals, holdingKey, nftHoldings } from "../../query/nfts.js";
import type { Snapshot } from "../../query/store/store.js";
import { type TokenMeta, tokenMetas } from "../../query/tokens.js";
import { findTransfers } from "../../query/transfers.js";
import { amountOf, LIMBS } from "../../store/format/amounts.js";
import { asOfEnvelope, DEFAULT_LIMIT } from "../answers/list-reply.js";
import { sendList } from "../answers/send-list.js";
import { type ApiContext, openChain } from "../context.js";
import { notFound } from "../errors.js";
import { asOf, asOfBlockParam, NO_PRICE, pageQuery } from "../params/holdings-params.js";
import { listQuery } from "../params/params.js";
import { resolveRange } from "../params/range.js";
import { historyItems, historyPage, historyReply, moved } from "./nft-history.js";
import { arrivalOf, collection, contents, HISTORY_COLUMNS, INVENTORY_COLUMNS, OWNER_COLUMNS } from "./nft-items.js";
import {
	ADDRESS,
	collectionPath,
	contractFilter,
	ID,
	parseOffset,
	supplemental,
	tokenPath,
	walletPath,
} from "./nft-params.js";

/*
 * The NFT API of the service we are compatible with (docs/api-contract.md §9), under
 * {base}/nft/{chain_id}/v1: what an address holds, a collection's owners, transfer histories,
 * a token's and a collection's metadata. Holdings come from the nft_balances/nft_holders indexes
 * (query/nfts.ts) as of any block; metadata from what the writers read from the node
 * (store/token-metadata.ts). No price source: sale_price is null. The routes' parameters are in
 * nft-params.ts, the parts of their items in nft-items.ts, the transfer histories in nft-history.ts.
 */

export function nftRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	r.get(
		"/nft/:chain_id/v1/:address/inventory",
		{
			schema: {
				summary: "NFTs an address holds",
				description:
					"Every ERC-721 and ERC-1155 token the address holds (positive amounts) at the head or as of block_number, by collection then token id, each with the transfer that brought it. Example: /nft/eip155-1/v1/0x.../inventory?metadata=true",
				tags: ["nft"],
				params: walletPath(),
				querystring: z.object({ ...pageQuery, ...supplemental, contract: contractFilter().optional() }).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const n = await asOf(db, q.block_number);
			const page = await nftHoldings(db, {
				by: "address",
				value: req.params.address,
				n,
				contract: q.contract,
				limit: q.limit ?? DEFAULT_LIMIT,
				after: parseOffset(q.offset, ADDRESS, ID),
			});
			const [came, metas, content] = await Promise.all([
				arrivals(db, page.items, n),
				tokenMetas(db, [...new Set(page.items.map((h) => h.token))]),
				contents(
					db,
					q.metadata,
					page.items.map((h) => ({ contract: h.token, tokenId: h.tokenId })),
				),
			]);
			const last = page.items.at(-1);
			return sendList(
				reply,
				q.format,
				asOfEnvelope(
					n,
					page.hasMore,
					page.hasMore && last ? `${last.token}_${last.tokenId}` : null,
					page.items.map((h) => {
						const a = came.get(holdingKey(h));
						return {
							id: `${h.token}:${h.tokenId}`,
							token_id: h.tokenId,
							amount: h.amount.toString(),
							collection: collection(h.token, metas.get(h.token), a?.standard),
							transfer: arrivalOf(a, h),
							metadata: content.get(`${h.token}:${h.tokenId}`) ?? null,
							sale_price: NO_PRICE,
						};
					}),
				),
				INVENTORY_COLUMNS,
			);
		},
	);

	r.get(
		"/nft/:chain_id/v1/:address/owner",
		{
			schema: {
				summary: "Owners of an NFT collection",
				description:
					"Every (token id, holder) of the collection with a positive amount, at the head or as of block_number, by token id then holder, each with the transfer that brought it. Example: /nft/eip155-1/v1/0x.../owner",
				tags: ["nft"],
				params: collectionPath(),
				querystring: z.object({ ...pageQuery, ...supplemental }).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const n = await asOf(db, q.block_number);
			const contract = req.params.address;
			const page = await nftHoldings(db, {
				by: "token",
				value: contract,
				n,
				limit: q.limit ?? DEFAULT_LIMIT,
				after: parseOffset(q.offset, ID, ADDRESS),
			});
			const [came, content] = await Promise.all([
				arrivals(db, page.items, n),
				contents(
					db,
					q.metadata,
					page.items.map((h) => ({ contract, tokenId: h.tokenId })),
				),
			]);
			const last = page.items.at(-1);
			return sendList(
				reply,
				q.format,
				asOfEnvelope(
					n,
					page.hasMore,
					page.hasMore && last ? `${last.tokenId}_${last.holder}` : null,
					page.items.map((h) => {
						const a = came.get(holdingKey(h));
						return {
							id: `${h.tokenId}:${h.holder}`,
							token_id: h.tokenId,
							owner: h.holder,
							amount: h.amount.toString(),
							transfer: Object.assign(arrivalOf(a, h), { owner: h.holder, from: a?.sender ?? null, to: h.holder }),
							metadata: content.get(`${contract}:${h.tokenId}`) ?? null,
							sale_price: NO_PRICE,
						};
					}),
				),
				OWNER_COLUMNS,
			);
		},
	);

	r.get(
		"/nft/:chain_id/v1/:address/history",
		{
			schema: {
				summary: "NFT transfers of an address",
				description:
					"ERC-721 and ERC-1155 transfers the address sent or received, one item per token id (a batch gives several), in chain order. Example: /nft/eip155-1/v1/0x.../history?contract=0x...",
				tags: ["nft"],
				params: walletPath(),
				querystring: z.object({ ...listQuery, ...supplemental, contract: contractFilter().optional() }).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const range = await resolveRange(db, q);
			const filter = {
				address: req.params.address,
				assets: ["nft" as const],
				contracts: q.contract ? [q.contract] : undefined,
			};
			const page = await historyPage(db, filter, q, range);
			return sendList(reply, q.format, await historyReply(db, range, page, q.metadata), HISTORY_COLUMNS);
		},
	);

	r.get(
		"/nft/:chain_id/v1/:address/:token_id/history",
		{
			schema: {
				summary: "Transfers of one NFT",
				description:
					"Every transfer of token token_id of the collection (ERC-721 or ERC-1155, batches included), in chain order. Example: /nft/eip155-1/v1/0x.../5340/history",
				tags: ["nft"],
				params: tokenPath(),
				querystring: z.object({ ...listQuery, ...supplemental }).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const range = await resolveRange(db, q);
			const tokenId = BigInt(req.params.token_id).toString();
			const page = await historyPage(db, { token: req.params.address, assets: ["nft"], tokenId }, q, range, tokenId);
			return sendList(reply, q.format, await historyReply(db, range, page, q.metadata), HISTORY_COLUMNS);
		},
	);

	r.get(
		"/nft/:chain_id/v1/:address/:token_id/metadata",
		{
			schema: {
				summary: "An NFT's metadata",
				description:
					"The token's URI (tokenURI or uri, read from the node) and what it holds (data: URIs decoded; remote ones fetched only where CHAINLAKE_FETCH_TOKEN_URIS=1), its collection, and its last transfer at or before block_number. Example: /nft/eip155-1/v1/0x.../5340/metadata",
				tags: ["nft"],
				params: tokenPath(),
				querystring: z.object({ block_number: asOfBlockParam.optional() }).strict(),
			},
		},
		async (req) => {
			const db = openChain(ctx, req);
			const n = await asOf(db, req.query.block_number);
			const contract = req.params.address;
			const tokenId = BigInt(req.params.token_id).toString();
			const last = await findTransfers(
				db,
				{ token: contract, assets: ["nft"], tokenId },
				{ start: 0, end: n, limit: 1, order: "desc" },
			);
			const [item] = await historyItems(
				db,
				last.rows.flatMap((row) => moved(row, tokenId)),
				true,
			);
			if (!item)
				throw notFound(
					"TOKEN_NOT_FOUND",
					`token ${tokenId} of ${contract} was never transferred in blocks 0..${n}: check the contract and token id`,
				);
			const { id: _id, ...rest } = item;
			return rest;
		},
	);

	r.get(
		"/nft/:chain_id/v1/:address/contract-data",
		{
			schema: {
				summary: "An NFT collection",
				description:
					"The collection's standard, name and symbol (read from the node) and its supply at the head: tokens minted minus burnt (for ERC-1155, amounts summed over ids). Example: /nft/eip155-1/v1/0x.../contract-data",
				tags: ["nft"],
				params: collectionPath(),
			},
		},
		async (req) => {
			const db = openChain(ctx, req);
			const n = await asOf(db, undefined);
			const contract = req.params.address;
			const meta = (await tokenMetas(db, [contract])).get(contract);
			// The zero address holds minus what was minted and not burnt, per id.
			const sums = await deltaSums(db, { kind: "nft", by: "token", value: contract, n });
			const [row] = await db.query(
				`WITH ${sums.ctes.join(", ")} SELECT count(*) AS ids, ${LIMBS.map((l) => `CAST(sum(${l}) AS VARCHAR) AS ${l}`).join(", ")} FROM sums WHERE address = $zero`,
				{ ...sums.params, zero: ZERO_ADDRESS },
				sums.window,
				sums.key,
			);
			const standard = await nftStandard(db, contract, meta, n);
			if (!standard && Number(row?.ids ?? 0) === 0)
				throw notFound("COLLECTION_NOT_FOUND", `${contract} has no ERC-721 or ERC-1155 transfers in blocks 0..${n}`);
			const supply = -amountOf(LIMBS.map((l) => (row?.[l] as string | null) ?? null));
			return { ...collection(contract, meta), standard: standard ?? "unknown", total_supply: supply.toString() };
		},
	);
}

/**
 * A collection's standard as its items show it (erc721 or erc1155): the metadata's where read,
 * else that of its latest NFT transfer up to block `n` (the metadata is read only once the
 * token's first blocks are settled, and the items already say what their transfers were);
 * undefined for an address that moved no NFT.
 */
async function nftStandard(db: Snapshot, contract: string, meta: TokenMeta | undefined, n: number) {
	if (meta?.standard === "erc721" || meta?.standard === "erc1155") return meta.standard;
	const last = await findTransfers(
		db,
		{ token: contract, assets: ["nft"] },
		{ start: 0, end: n, limit: 1, order: "desc" },
	);
	const standard = last.rows[0]?.token_standard;
	return typeof standard === "string" ? standard : undefined;
}
