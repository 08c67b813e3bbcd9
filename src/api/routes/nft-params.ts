import { z } from "zod";
import { badRequest } from "../errors.js";
import { chainParam } from "../params/holdings-params.js";
import { describedAs, documented } from "../params/param-docs.js";
import { addressParam, booleanParam, EXAMPLE } from "../params/params.js";

/*
 * The parameters of the NFT routes (nfts.ts): wallet, collection and token paths, the
 * metadata/sale_price switches, and the offsets of holdings pages.
 */

const UINT256_END = 2n ** 256n;
/** A uint256 in decimal: digits (up to 78) whose value is below 2^256 (78 digits reach 10^78 - 1, past it). */
export const isUint256 = (v: string): boolean => /^\d{1,78}$/.test(v) && BigInt(v) < UINT256_END;
const TOKEN_ID_RULE = `must be a token id: a decimal number from 0 to 2^256 - 1 = ${UINT256_END - 1n} (a uint256)`;

// A string of digits, as a JSON number would round it past 2^53; checked against 2^256 too, as a
// larger one names no token (issue 27: 2^256 answered 200 with an empty history).
const tokenIdParam = documented(z.string().refine(isUint256, TOKEN_ID_RULE), {
	schema: { type: "string", pattern: "^\\d{1,78}$" },
	description: "The token id, in decimal (a uint256: 0 to 2^256 - 1, up to 78 digits).",
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
export function parseOffset(
	offset: string | undefined,
	first: { test(s: string): boolean },
	second: { test(s: string): boolean },
): [string, string] | undefined {
	if (offset === undefined) return undefined;
	const [a = "", b = "", ...rest] = offset.split("_");
	if (rest.length > 0 || !first.test(a) || !second.test(b))
		throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page");
	return [a, b];
}
export const ADDRESS = /^0x[0-9a-f]{40}$/;
/** A token id in an offset: a uint256, as in a path. */
export const ID = { test: isUint256 };
