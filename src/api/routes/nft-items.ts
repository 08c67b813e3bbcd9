import type { Arrival, NftHolding } from "../../query/nfts.js";
import type { Snapshot } from "../../query/store/store.js";
import { type TokenMeta, tokenUris } from "../../query/tokens.js";
import { tokenContent } from "../token-uri.js";

/*
 * The parts of an NFT route's items (nfts.ts, nft-history.ts): a collection, the transfer that
 * brought a holding, a token's metadata when asked, and each list's columns in CSV and Arrow.
 */

export const collection = (address: string, meta: TokenMeta | undefined, standard?: string) => ({
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
export const INVENTORY_COLUMNS = ["id", "token_id", "amount", ...COLLECTION, ...ARRIVAL, "metadata", "sale_price"];
export const OWNER_COLUMNS = [
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
export const HISTORY_COLUMNS = [
	"id",
	"token_id",
	"amount",
	...COLLECTION,
	"metadata",
	...["block_number", "block_timestamp", "tx_hash", "from", "to", "origin", "owner"].map((c) => `transfer.${c}`),
	"sale_price",
];

/** The `metadata` objects of (contract, id) pairs, when the client asked for them. */
export async function contents(
	db: Snapshot,
	wanted: boolean | undefined,
	pairs: { contract: string; tokenId: string }[],
) {
	const out = new Map<string, Awaited<ReturnType<typeof tokenContent>>>();
	if (!wanted) return out;
	const uris = await tokenUris(db, pairs);
	for (const p of pairs) {
		const key = `${p.contract}:${p.tokenId}`;
		if (!out.has(key)) out.set(key, await tokenContent(uris.get(key), p.tokenId));
	}
	return out;
}

/** The inventory's `transfer`: the arrival, or nulls where none was found (cannot happen for a
 * positive holding with its history stored; kept null rather than failing the page). */
export function arrivalOf(a: Arrival | undefined, h: NftHolding) {
	return {
		block_number: a?.block_number ?? h.seenAt,
		block_timestamp: a?.block_timestamp ?? null,
		tx_hash: a?.transaction_hash ?? null,
		sender: a?.sender ?? null,
		origin: a?.origin ?? null,
	};
}
