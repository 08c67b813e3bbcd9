import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { nativeBalance, tokenBalances, tokenBalancesPage } from "../../query/balances.js";
import { type HolderCursor, tokenHolders, ZERO_ADDRESS } from "../../query/holders.js";
import { type TokenMeta, tokenMetas } from "../../query/tokens.js";
import { PARTS, withDecimals } from "../../store/format/amounts.js";
import { asOfEnvelope, DEFAULT_LIMIT } from "../answers/list-reply.js";
import { sendList } from "../answers/send-list.js";
import { type ApiContext, openChain } from "../context.js";
import { ApiError, badRequest } from "../errors.js";
import { asOf, asOfBlockParam, chainParam, NO_PRICE, pageQuery } from "../params/holdings-params.js";
import { describedAs } from "../params/param-docs.js";
import { addressParam, EXAMPLE } from "../params/params.js";

/*
 * The Balances API of the service we are compatible with (docs/api-contract.md §8), under
 * {base}/balances/{chain_id}/v1: a wallet's ERC-20 balances, a token's holders, a token's supply,
 * each at the head or as of `block_number`. Computed from the lake (query/balances.ts,
 * query/holders.ts), exact for uint256. Name, symbol and decimals come from the token metadata
 * the writers read from the node (store/token-metadata.ts): null until read, or where the token
 * does not answer; value_calculated is then the raw value.
 */

const tokenInfo = (address: string, meta: TokenMeta | undefined) => ({
	address,
	decimals: meta?.decimals ?? null,
	symbol: meta?.symbol ?? null,
	name: meta?.name ?? null,
	estimated_usd_price: NO_PRICE,
});

/** The columns of each list in CSV and Arrow answers (api/answers/list-columns.ts). */
const AMOUNT = ["seen_at_block_number", "value_raw", "value_calculated", "estimated_usd_value"];
const TOKEN_BALANCE_COLUMNS = [
	"id",
	...AMOUNT,
	...["address", "decimals", "symbol", "name", "estimated_usd_price"].map((c) => `token.${c}`),
];
const TOKEN_HOLDER_COLUMNS = ["id", "address", ...AMOUNT];

/** `raw` with the token's decimals applied (as is where they are unknown). */
const calculated = (raw: bigint, meta: TokenMeta | undefined) => withDecimals(raw, meta?.decimals ?? 0);

const wallet = describedAs(addressParam, "The wallet.");
const token = describedAs(addressParam, "The ERC-20 token contract.", { example: EXAMPLE.token });

export function balancesRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	r.get(
		"/balances/:chain_id/v1/addresses/:address/tokens",
		{
			schema: {
				summary: "ERC-20 balances of a wallet",
				description:
					"Every ERC-20 token the address holds (non-zero balances), by token address, at the head or as of block_number, summed exactly from the token transfers stored. Example: /balances/eip155-1/v1/addresses/0x.../tokens?block_number=18000000",
				tags: ["balances"],
				params: z.object({ chain_id: chainParam, address: wallet }),
				querystring: z.object(pageQuery).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const n = await asOf(db, q.block_number);
			const after = q.offset;
			if (after !== undefined && !/^0x[0-9a-f]{40}$/.test(after))
				throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page (a token address)");
			const limit = q.limit ?? DEFAULT_LIMIT;
			const { balances: page, next } = await tokenBalancesPage(db, req.params.address, n, { limit, after });
			const hasMore = next !== undefined;
			const metas = await tokenMetas(
				db,
				page.map((b) => b.token),
			);
			return sendList(
				reply,
				q.format,
				asOfEnvelope(
					n,
					hasMore,
					next ?? null,
					page.map((b) => ({
						id: `${req.params.address}:${b.token}`,
						seen_at_block_number: b.seenAt,
						value_raw: b.raw.toString(),
						value_calculated: calculated(b.raw, metas.get(b.token)),
						estimated_usd_value: NO_PRICE,
						token: tokenInfo(b.token, metas.get(b.token)),
					})),
				),
				TOKEN_BALANCE_COLUMNS,
			);
		},
	);

	r.get(
		"/balances/:chain_id/v1/tokens/:contract/holders",
		{
			schema: {
				summary: "Holders of an ERC-20 token",
				description:
					"Every address holding the token (non-zero balances), largest balance first, then by address, at the head or as of block_number. Example: /balances/eip155-1/v1/tokens/0x.../holders?limit=100",
				tags: ["balances"],
				params: z.object({ chain_id: chainParam, contract: token }),
				querystring: z.object(pageQuery).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const n = await asOf(db, q.block_number);
			const after = q.offset === undefined ? undefined : parseCursor(q.offset);
			const page = await tokenHolders(db, req.params.contract, { limit: q.limit ?? DEFAULT_LIMIT, after }, n);
			const meta = (await tokenMetas(db, [req.params.contract])).get(req.params.contract);
			return sendList(
				reply,
				q.format,
				asOfEnvelope(
					n,
					page.hasMore,
					page.next ? `${page.next.parts.join("_")}_${page.next.address}` : null,
					page.holders.map((h) => ({
						id: `${h.address}:${req.params.contract}`,
						address: h.address,
						seen_at_block_number: h.seenAt,
						value_raw: h.raw.toString(),
						value_calculated: calculated(h.raw, meta),
						estimated_usd_value: NO_PRICE,
					})),
				),
				TOKEN_HOLDER_COLUMNS,
			);
		},
	);

	r.get(
		"/balances/:chain_id/v1/tokens/:contract",
		{
			schema: {
				summary: "An ERC-20 token and its supply",
				description:
					"The token's supply at the head or as of block_number: what was minted (transferred from the zero address) minus what was burnt (transferred to it). Example: /balances/eip155-1/v1/tokens/0x...",
				tags: ["balances"],
				params: z.object({ chain_id: chainParam, contract: token }),
				querystring: z.object({ block_number: asOfBlockParam.optional() }).strict(),
			},
		},
		async (req) => {
			const db = openChain(ctx, req);
			const n = await asOf(db, req.query.block_number);
			const zero = (await tokenBalances(db, ZERO_ADDRESS, n)).find((b) => b.token === req.params.contract);
			const supply = zero && zero.raw < 0n ? -zero.raw : null;
			const meta = (await tokenMetas(db, [req.params.contract])).get(req.params.contract);
			return {
				...tokenInfo(req.params.contract, meta),
				total_supply_raw: supply?.toString() ?? null,
				total_supply_calculated: supply === null ? null : calculated(supply, meta),
			};
		},
	);

	r.get(
		"/balances/:chain_id/v1/addresses/:address/native",
		{
			schema: {
				summary: "Native (ETH) balance of an account",
				description:
					"The account's native currency balance in wei at the head or as of block_number: its genesis allocation plus every value transfer (internal ones included, from traces), gas fee, fee tip, withdrawal and block reward since. Needs traces. Example: /balances/eip155-1/v1/addresses/0x.../native?block_number=18000000",
				tags: ["balances"],
				params: z.object({ chain_id: chainParam, address: describedAs(addressParam, "The account.") }),
				querystring: z.object({ block_number: asOfBlockParam.optional() }).strict(),
			},
		},
		async (req) => {
			const db = openChain(ctx, req);
			const n = await asOf(db, req.query.block_number);
			const blind = db.chunks().find((c) => c.from <= n && !c.datasets.includes("traces"));
			if (blind)
				throw new ApiError(
					503,
					"TRACES_UNAVAILABLE",
					`native balances need internal transfers from traces, and ${db.chain} blocks ${blind.from}..${blind.to} were exported without them; backfill them from a node with trace_block or debug_traceBlockByNumber`,
				);
			const b = await nativeBalance(db, req.params.address, n);
			return {
				address: req.params.address,
				block_number: n,
				seen_at_block_number: b.seenAt,
				value_raw: b.raw.toString(),
				value_calculated: withDecimals(b.raw, 18),
				genesis_raw: b.opening?.toString() ?? null,
				estimated_usd_value: NO_PRICE,
			};
		},
	);
}

/** next_offset of a holders page: the balance's normalized parts (most significant first) and the address. */
function parseCursor(offset: string): HolderCursor {
	const parts = offset.split("_");
	const address = parts.pop() ?? "";
	if (parts.length !== PARTS.length || !parts.every((p) => /^-?\d{1,27}$/.test(p)) || !/^0x[0-9a-f]{40}$/.test(address))
		throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page of holders");
	return { parts, address };
}
