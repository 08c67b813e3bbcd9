import { z } from "zod";
import { badRequest } from "../errors.js";
import { chainParam } from "../params/holdings-params.js";
import { describedAs, documented } from "../params/param-docs.js";
import { addressParam, booleanParam, EXAMPLE } from "../params/params.js";

/*
 * The parameters of the NFT routes (nfts.ts): wallet, collection and token paths, the
 * metadata/sale_price switches, and the offsets of holdings pages.
 */

// A uint256 in decimal: a string of digits, as a JSON number would round it past 2^53.
const tokenIdParam = documented(z.string().regex(/^\d{1,78}$/, "must be a token id: a decimal number"), {
	schema: { type: "string", pattern: "^\\d{1,78}$" },
	description: "The token id, in decimal (a uint256: up to 78 digits).",
	example: "5340",
});
export const supplemental = {
	metadata: describedAs(
		booleanParam,
		"`true`: fill each item's `metadata` (the token URI and, for a `data:` URI, its content).",
	).optional(),
	sale_price: describedAs(booleanParam, "Accepted; `sale_price` is always null (no price source).").optional(),
};
/** Only this collection's tokens: inventory and an address's history. */
export const contractFilter = () =>
	describedAs(addressParam, "Only tokens of this collection.", { example: EXAMPLE.collection });
export const walletPath = () => z.object({ chain_id: chainParam, address: describedAs(addressParam, "The wallet.") });
const collectionParam = () =>
	describedAs(addressParam, "The collection's contract (ERC-721 or ERC-1155).", { example: EXAMPLE.collection });
export const collectionPath = () => z.object({ chain_id: chainParam, address: collectionParam() });
export const tokenPath = () => z.object({ chain_id: chainParam, address: collectionParam(), token_id: tokenIdParam });

/** `a_b` of a holdings page's last item → [a, b], checked. */
export function parseOffset(offset: string | undefined, first: RegExp, second: RegExp): [string, string] | undefined {
	if (offset === undefined) return undefined;
	const [a = "", b = "", ...rest] = offset.split("_");
	if (rest.length > 0 || !first.test(a) || !second.test(b))
		throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page");
	return [a, b];
}
export const ADDRESS = /^0x[0-9a-f]{40}$/;
export const ID = /^\d{1,78}$/;
