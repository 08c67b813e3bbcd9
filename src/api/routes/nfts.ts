import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { deltaSums } from "../../query/deltas.js";
import { ZERO_ADDRESS } from "../../query/holders.js";
import { type Arrival, arrivals, holdingKey, type NftHolding, nftHoldings } from "../../query/nfts.js";
import type { Row, Snapshot } from "../../query/store.js";
import { type TokenMeta, tokenMetas, tokenUris } from "../../query/tokens.js";
import { findTransfers, type TransferFilter } from "../../query/transfers.js";
import { amountOf, LIMBS } from "../../store/amounts.js";
import { asOfEnvelope, DEFAULT_LIMIT, pageOf } from "../answers/list-reply.js";
import { sendList } from "../answers/send-list.js";
import { type ApiContext, openChain } from "../context.js";
import { badRequest, notFound } from "../errors.js";
import { asOf, asOfBlockParam, chainParam, NO_PRICE, pageQuery } from "../params/holdings-params.js";
import { describedAs, documented } from "../params/param-docs.js";
import { addressParam, booleanParam, EXAMPLE, type ListQuery, listQuery } from "../params/params.js";
import { type ResolvedRange, resolveRange } from "../params/range.js";
import { tokenContent } from "../token-uri.js";

/*
 * The NFT API of the service we are compatible with (docs/api-contract.md §9), under
 * {base}/nft/{chain_id}/v1: what an address holds, a collection's owners, transfer histories,
 * a token's and a collection's metadata. Holdings come from the nft_balances/nft_holders indexes
 * (query/nfts.ts) as of any block; metadata from what the writers read from the node
 * (store/token-metadata.ts). No price source: sale_price is null.
 */

// A uint256 in decimal: a string of digits, as a JSON number would round it past 2^53.
const tokenIdParam = documented(z.string().regex(/^\d{1,78}$/, "must be a token id: a decimal number"), {
	schema: { type: "string", pattern: "^\\d{1,78}$" },
	description: "The token id, in decimal (a uint256: up to 78 digits).",
	example: "5340",
});
const supplemental = {
	metadata: describedAs(
		booleanParam,
		"`true`: fill each item's `metadata` (the token URI and, for a `data:` URI, its content).",
	).optional(),
	sale_price: describedAs(booleanParam, "Accepted; `sale_price` is always null (no price source).").optional(),
};
/** Only this collection's tokens: inventory and an address's history. */
const contractFilter = () =>
	describedAs(addressParam, "Only tokens of this collection.", { example: EXAMPLE.collection });
const walletPath = () => z.object({ chain_id: chainParam, address: describedAs(addressParam, "The wallet.") });
const collectionParam = () =>
	describedAs(addressParam, "The collection's contract (ERC-721 or ERC-1155).", { example: EXAMPLE.collection });
const collectionPath = () => z.object({ chain_id: chainParam, address: collectionParam() });
const tokenPath = () => z.object({ chain_id: chainParam, address: collectionParam(), token_id: tokenIdParam });

const collection = (address: string, meta: TokenMeta | undefined, standard?: string) => ({
	address,
	standard: meta?.standard ?? standard ?? "unknown",
	name: meta?.name ?? null,
	symbol: meta?.symbol ?? null,
});

/** The columns of each list in CSV and Arrow answers (api/answers/list-columns.ts). */
const COLLECTION = ["collection.address", "collection.standard", "collection.name", "collection.symbol"];
const ARRIVAL = [
	"transfer.block_number",
	"transfer.block_timestamp",
	"transfer.tx_hash",
	"transfer.sender",
	"transfer.origin",
];
const INVENTORY_COLUMNS = ["id", "token_id", "amount", ...COLLECTION, ...ARRIVAL, "metadata", "sale_price"];
const OWNER_COLUMNS = [
	"id",
	"token_id",
	"owner",
	"amount",
	...ARRIVAL,
	"transfer.owner",
	"transfer.from",
	"transfer.to",
	"metadata",
	"sale_price",
];
const HISTORY_COLUMNS = [
	"id",
	"token_id",
	"amount",
	...COLLECTION,
	"metadata",
	...["block_number", "block_timestamp", "tx_hash", "from", "to", "origin", "owner"].map((c) => `transfer.${c}`),
	"sale_price",
];

/** The `metadata` objects of (contract, id) pairs, when the client asked for them. */
async function contents(db: Snapshot, wanted: boolean | undefined, pairs: { contract: string; tokenId: string }[]) {
	const out = new Map<string, Awaited<ReturnType<typeof tokenContent>>>();
	if (!wanted) return out;
	const uris = await tokenUris(db, pairs);
	for (const p of pairs) {
		const key = `${p.contract}:${p.tokenId}`;
		if (!out.has(key)) out.set(key, await tokenContent(uris.get(key), p.tokenId));
	}
	return out;
}

/** `a_b` of a holdings page's last item → [a, b], checked. */
function parseOffset(offset: string | undefined, first: RegExp, second: RegExp): [string, string] | undefined {
	if (offset === undefined) return undefined;
	const [a = "", b = "", ...rest] = offset.split("_");
	if (rest.length > 0 || !first.test(a) || !second.test(b))
		throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page");
	return [a, b];
}
const ADDRESS = /^0x[0-9a-f]{40}$/;
const ID = /^\d{1,78}$/;

/** One NFT moved by a transfers row: a TransferBatch row moves several, item `index` of them. */
interface Moved {
	row: Row;
	tokenId: string;
	amount: string;
	index: number;
	/** How many the row moves. */
	of: number;
}

/** The NFTs a transfers row moves (only those of id `only`, if given). */
function moved(r: Row, only?: string): Moved[] {
	const ids = (r.batch_token_ids as string[] | null) ?? null;
	if (!ids) return [{ row: r, tokenId: String(r.token_id), amount: String(r.value ?? "1"), index: 0, of: 1 }];
	const values = (r.batch_values as string[]) ?? [];
	return ids
		.map((tokenId, index) => ({ row: r, tokenId, amount: String(values[index] ?? "0"), index, of: ids.length }))
		.filter((x) => only === undefined || x.tokenId === only);
}

/** An item's id: its row's, with `:<index>` for an item of a TransferBatch row. */
const movedId = (m: Moved) => (m.of > 1 ? `${m.row.id}:${m.index}` : String(m.row.id));

/** The id just before (asc) or after (desc) `id` in id order: item ids are one 28-digit hex number. */
function neighbourId(id: string, order: "asc" | "desc"): string | undefined {
	const n = BigInt(`0x${id.replaceAll("-", "")}`) + (order === "asc" ? -1n : 1n);
	if (n < 0n) return undefined;
	const hex = n.toString(16).padStart(28, "0");
	return `${hex.slice(0, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const HISTORY_OFFSET = /^([0-9a-f]{16}-[0-9a-f]{4}-[0-9a-f]{8})(?::(\d{1,6}))?$/;

/**
 * A page of NFT history: transfers rows matching `f` expanded to one item per NFT moved, exactly
 * `limit` items while more follow. A page may end inside a TransferBatch row: its next_offset is
 * then `<row id>:<index>`, and the next page starts at that row's following item.
 */
async function historyPage(
	db: Snapshot,
	f: TransferFilter,
	q: ListQuery,
	range: ResolvedRange,
	only?: string,
): Promise<{ items: Moved[]; hasMore: boolean; next: string | null }> {
	const m = q.offset === undefined ? null : HISTORY_OFFSET.exec(q.offset);
	if (q.offset !== undefined && !m)
		throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page");
	const page = pageOf({ ...q, offset: undefined }, range);
	const [resumeRow, resumeAt] = m ? [m[1] as string, m[2] === undefined ? null : Number(m[2])] : [null, null];
	// Resuming inside a row: read from that row itself.
	let after: string | undefined =
		resumeRow === null ? undefined : resumeAt === null ? resumeRow : neighbourId(resumeRow, page.order);
	const items: Moved[] = [];
	let more = true;
	while (more && items.length <= page.limit) {
		const result = await findTransfers(db, f, { ...page, after });
		for (const row of result.rows)
			for (const x of moved(row, only))
				if (!(resumeAt !== null && row.id === resumeRow && x.index <= resumeAt)) items.push(x);
		more = result.hasMore;
		after = result.rows.at(-1)?.id as string | undefined;
		if (result.rows.length === 0) break;
	}
	const kept = items.slice(0, page.limit);
	const hasMore = items.length > page.limit;
	const last = kept.at(-1);
	const next =
		!hasMore || !last ? null : last.index === last.of - 1 ? String(last.row.id) : `${last.row.id}:${last.index}`;
	return { items: kept, hasMore, next };
}

export function nftRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	/** History items of NFTs moved, with collection and (if asked) metadata. */
	async function history(db: Snapshot, items: Moved[], metadata: boolean | undefined) {
		const metas = await tokenMetas(db, [...new Set(items.map((i) => String(i.row.contract)))]);
		const content = await contents(
			db,
			metadata,
			items.map((i) => ({ contract: String(i.row.contract), tokenId: i.tokenId })),
		);
		return items.map((m) => {
			const { row, tokenId, amount } = m;
			return {
				id: movedId(m),
				token_id: tokenId,
				amount,
				collection: collection(String(row.contract), metas.get(String(row.contract)), String(row.token_standard)),
				metadata: content.get(`${row.contract}:${tokenId}`) ?? null,
				transfer: {
					block_number: Number(row.block_number),
					block_timestamp: Number(row.block_timestamp),
					tx_hash: String(row.transaction_hash),
					from: String(row.sender),
					to: String(row.recipient),
					origin: String(row.origin),
					owner: String(row.recipient),
				},
				sale_price: NO_PRICE,
			};
		});
	}

	/** The list answer of a history page. */
	const historyReply = async (
		db: Snapshot,
		range: ResolvedRange,
		p: Awaited<ReturnType<typeof historyPage>>,
		metadata?: boolean,
	) => ({
		range: { has_more: p.hasMore, start_block: range.start, end_block: range.end, next_offset: p.next },
		items: await history(db, p.items, metadata),
	});

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
			const db = openChain(ctx, req.params.chain_id);
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
			const db = openChain(ctx, req.params.chain_id);
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
							transfer: { ...arrivalOf(a, h), owner: h.holder, from: a?.sender ?? null, to: h.holder },
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
			const db = openChain(ctx, req.params.chain_id);
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
			const db = openChain(ctx, req.params.chain_id);
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
			const db = openChain(ctx, req.params.chain_id);
			const n = await asOf(db, req.query.block_number);
			const contract = req.params.address;
			const tokenId = BigInt(req.params.token_id).toString();
			const last = await findTransfers(
				db,
				{ token: contract, assets: ["nft"], tokenId },
				{ start: 0, end: n, limit: 1, order: "desc" },
			);
			const [item] = await history(
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
			const db = openChain(ctx, req.params.chain_id);
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

/** The inventory's `transfer`: the arrival, or nulls where none was found (cannot happen for a
 * positive holding with its history stored; kept null rather than failing the page). */
function arrivalOf(a: Arrival | undefined, h: NftHolding) {
	return {
		block_number: a?.block_number ?? h.seenAt,
		block_timestamp: a?.block_timestamp ?? null,
		tx_hash: a?.transaction_hash ?? null,
		sender: a?.sender ?? null,
		origin: a?.origin ?? null,
	};
}
