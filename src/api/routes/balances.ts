import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { tokenBalances } from "../../query/balances.js";
import { type HolderCursor, tokenHolders, ZERO_ADDRESS } from "../../query/holders.js";
import type { Snapshot } from "../../query/store.js";
import { PARTS, withDecimals } from "../../store/amounts.js";
import { missingRanges } from "../../store/manifest.js";
import { type ApiContext, openChain } from "../context.js";
import { ApiError, badRequest } from "../errors.js";
import { DEFAULT_LIMIT } from "../list-reply.js";
import { addressParam, blockNumberParam, formatParam, limitParam } from "../params.js";
import { headBlock } from "../range.js";
import { sendList } from "../send-list.js";

/*
 * The Balances API of the service we are compatible with (docs/api-contract.md §8), under
 * {base}/balances/{chain_id}/v1: a wallet's ERC-20 balances, a token's holders, a token's supply,
 * each at the head or as of `block_number`. Computed from the lake (query/balances.ts,
 * query/holders.ts), exact for uint256. Token metadata (name, symbol, decimals) is not collected
 * yet: those fields are null and value_calculated is the raw value (decimals unknown).
 */

const chainParam = z.string().regex(/^eip155-\d{1,16}$/, "must be eip155-<chain number>, e.g. eip155-1");
const offsetParam = z.string().max(300, "must be the next_offset of the previous page");
const pageQuery = {
	limit: limitParam.optional(),
	offset: offsetParam.optional(),
	block_number: blockNumberParam.optional(),
	format: formatParam.optional(),
	// The official client forwards its page size as batchSize next to limit: accepted, unused.
	batchSize: z.string().optional(),
};

/** No price source: every price field is null (README says so). */
const NO_PRICE = null;

/** `block_number` (absolute, negative from the head, or latest) → a stored block; balances need the
 * whole history from block 0, so a folder with a gap answers 503 saying which blocks to backfill. */
async function asOf(db: Snapshot, blockNumber: string | undefined): Promise<number> {
	const head = await headBlock(db);
	const chunks = db.chunks();
	const gaps = missingRanges({ version: 1, chain: db.chain, chain_number: 0, chunks: [...chunks] }, 0, head);
	if (gaps.length > 0) {
		const [a, b] = gaps[0] as [number, number];
		throw new ApiError(
			503,
			"HISTORY_INCOMPLETE",
			`balances are sums over the whole history, and ${db.chain} lacks blocks ${a}..${b}: backfill them (npm run backfill -- --from ${a} --to ${b})`,
		);
	}
	if (blockNumber === undefined || blockNumber === "latest") return head;
	const n = Number(blockNumber);
	const block = n < 0 ? head + n : n;
	if (block < 0)
		throw badRequest("INVALID_BLOCK", `block_number ${blockNumber} is before block 0 (the head is ${head})`);
	if (block > head)
		throw badRequest(
			"BLOCK_NOT_STORED",
			`block_number ${block} is past the newest block stored (${head}); ask for ${head} or less, or latest`,
		);
	return block;
}

const tokenInfo = (address: string) => ({
	address,
	decimals: null,
	symbol: null,
	name: null,
	estimated_usd_price: NO_PRICE,
});

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
				params: z.object({ chain_id: chainParam, address: addressParam }),
				querystring: z.object(pageQuery).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req.params.chain_id);
			const q = req.query;
			const n = await asOf(db, q.block_number);
			const after = q.offset;
			if (after !== undefined && !/^0x[0-9a-f]{40}$/.test(after))
				throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page (a token address)");
			const limit = q.limit ?? DEFAULT_LIMIT;
			const all = (await tokenBalances(db, req.params.address, n)).filter(
				(b) => after === undefined || b.token > after,
			);
			const page = all.slice(0, limit);
			const hasMore = all.length > limit;
			return sendList(reply, q.format, {
				range: {
					has_more: hasMore,
					start_block: 0,
					end_block: n,
					next_offset: hasMore ? (page.at(-1)?.token ?? null) : null,
				},
				items: page.map((b) => ({
					id: `${req.params.address}:${b.token}`,
					seen_at_block_number: b.seenAt,
					value_raw: b.raw.toString(),
					value_calculated: withDecimals(b.raw, 0),
					estimated_usd_value: NO_PRICE,
					token: tokenInfo(b.token),
				})),
			});
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
				params: z.object({ chain_id: chainParam, contract: addressParam }),
				querystring: z.object(pageQuery).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req.params.chain_id);
			const q = req.query;
			const n = await asOf(db, q.block_number);
			const after = q.offset === undefined ? undefined : parseCursor(q.offset);
			const page = await tokenHolders(db, req.params.contract, { limit: q.limit ?? DEFAULT_LIMIT, after }, n);
			return sendList(reply, q.format, {
				range: {
					has_more: page.hasMore,
					start_block: 0,
					end_block: n,
					next_offset: page.next ? `${page.next.parts.join("_")}_${page.next.address}` : null,
				},
				items: page.holders.map((h) => ({
					id: `${h.address}:${req.params.contract}`,
					address: h.address,
					seen_at_block_number: h.seenAt,
					value_raw: h.raw.toString(),
					value_calculated: withDecimals(h.raw, 0),
					estimated_usd_value: NO_PRICE,
				})),
			});
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
				params: z.object({ chain_id: chainParam, contract: addressParam }),
				querystring: z.object({ block_number: blockNumberParam.optional() }).strict(),
			},
		},
		async (req) => {
			const db = openChain(ctx, req.params.chain_id);
			const n = await asOf(db, req.query.block_number);
			const zero = (await tokenBalances(db, ZERO_ADDRESS, n)).find((b) => b.token === req.params.contract);
			const supply = zero && zero.raw < 0n ? -zero.raw : null;
			return {
				...tokenInfo(req.params.contract),
				total_supply_raw: supply?.toString() ?? null,
				total_supply_calculated: supply === null ? null : withDecimals(supply, 0),
			};
		},
	);
}

/** next_offset of a holders page: the balance's normalized parts (most significant first) and the address. */
function parseCursor(offset: string): HolderCursor {
	const parts = offset.split("_");
	const address = parts.pop() ?? "";
	if (parts.length !== PARTS.length || !parts.every((p) => /^-?\d{1,40}$/.test(p)) || !/^0x[0-9a-f]{40}$/.test(address))
		throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page of holders");
	return { parts, address };
}
