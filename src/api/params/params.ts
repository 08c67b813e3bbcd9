import { z } from "zod";
import type { AssetFilter } from "../../query/transfers.js";
import { describedAs, documented, type OpenApiSchema, type ParamDoc } from "./param-docs.js";

/*
 * Each parser below parses a query or path string; `documented` says, for the OpenAPI document
 * and /docs only, what value the string stands for (param-docs.ts). The routes describe a shared
 * parser again where it means something of their own (`describedAs`).
 */

/** Values from Ethereum mainnet (eip155-1), where every example of the docs points. */
export const EXAMPLE = {
	/** vitalik.eth */
	wallet: "0xd8da6bf26964af9d7eed9e03e53415d37aa96045",
	/** USDC */
	token: "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48",
	/** Bored Ape Yacht Club (ERC-721) */
	collection: "0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d",
	/** The first transaction that moved ether (block 46147). */
	tx: "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060",
	/** The genesis block. */
	block: "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3",
	/** keccak256("Transfer(address,address,uint256)"): ERC-20 and ERC-721 transfers. */
	transferTopic: "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
} as const;

const ADDRESS: OpenApiSchema = { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" };
const HASH: OpenApiSchema = { type: "string", pattern: "^0x[0-9a-fA-F]{64}$" };
/** The API's block numbers reach 15 digits either way (blockNumberParam). */
const BLOCK_NUMBER: OpenApiSchema = {
	anyOf: [
		{ type: "integer", minimum: -999_999_999_999_999, maximum: 999_999_999_999_999 },
		{ type: "string", enum: ["latest"] },
	],
};

/** Query values arrive as strings; a repeated parameter arrives as an array and is refused. */
const text = (what: string) =>
	z.string({
		error: (iss) => (Array.isArray(iss.input) ? "give this parameter once" : `must be ${what}`),
	});

export const addressParam = documented(
	text("an address")
		.regex(/^0x[0-9a-fA-F]{40}$/, "must be an address: 0x followed by 40 hex digits")
		.transform((a) => a.toLowerCase()),
	{ schema: ADDRESS, description: "An address: 0x and 40 hex digits, any case.", example: EXAMPLE.wallet },
);

export const hashParam = documented(
	text("a hash")
		.regex(/^0x[0-9a-fA-F]{64}$/, "must be a hash: 0x followed by 64 hex digits")
		.transform((h) => h.toLowerCase()),
	{ schema: HASH, description: "A hash: 0x and 64 hex digits, any case.", example: EXAMPLE.tx },
);

/** Comma-separated addresses, at most 20 (api-contract.md §5). */
/** Comma-separated 32-byte hashes or topics, at most 20. */
/** A comma-separated list of at most 20 values of one format, checked as given, then lowercased. */
const hexList = (what: string, format: RegExp) =>
	text(`a comma-separated list of ${what}`)
		.transform((s) => s.split(",").map((v) => v.trim()))
		.refine((list) => list.length <= 20, "takes at most 20 values")
		.refine((list) => list.every((v) => format.test(v)), `must be ${what}, comma-separated`)
		.transform((list) => list.map((v) => v.toLowerCase()));

/** At most 20 values, comma-separated: OpenAPI's array in style form without explode (param-docs.ts). */
const listOf = (items: OpenApiSchema): OpenApiSchema => ({ type: "array", items, minItems: 1, maxItems: 20 });

export const hashList = documented(hexList("hashes (0x + 64 hex digits)", /^0x[0-9a-fA-F]{64}$/), {
	schema: listOf(HASH),
	description: "Hashes (0x and 64 hex digits), comma-separated, at most 20: any of them matches.",
	example: [EXAMPLE.transferTopic],
});
export const addressList = documented(hexList("addresses (0x + 40 hex digits)", /^0x[0-9a-fA-F]{40}$/), {
	schema: listOf(ADDRESS),
	description: "Addresses (0x and 40 hex digits), comma-separated, at most 20: any of them matches.",
	example: [EXAMPLE.token],
});
export const selectorList = documented(
	hexList("4-byte selectors (0x + 8 hex digits, e.g. 0xa9059cbb)", /^0x[0-9a-fA-F]{8}$/),
	{
		schema: listOf({ type: "string", pattern: "^0x[0-9a-fA-F]{8}$" }),
		description: "4-byte function selectors (0x and 8 hex digits), comma-separated, at most 20: any of them matches.",
		example: ["0xa9059cbb", "0x23b872dd"],
	},
);

export const blockNumberParam = documented(
	text("a block number").regex(
		/^(latest|-?\d{1,15})$/,
		"must be a block number, a negative number (blocks before the head) or latest",
	),
	{
		schema: BLOCK_NUMBER,
		description: "A block: its number, a negative number (that many blocks before the newest stored) or `latest`.",
		example: "latest",
	},
);
export const timestampParam = documented(text("a unix timestamp").regex(/^\d{1,12}$/, "must be unix seconds"), {
	schema: { type: "integer", minimum: 0, maximum: 999_999_999_999 },
	description: "A time in Unix seconds.",
	example: 1_700_000_000,
});

export const limitParam = documented(
	text("a number")
		.regex(/^-?\d+$/, "must be a whole number from 1 to 1000 (default 100)")
		.transform(Number)
		.refine((n) => n >= 1 && n <= 1000, "must be from 1 to 1000 (default 100)"),
	{
		schema: { type: "integer", minimum: 1, maximum: 1000, default: 100 },
		description: "Items per page, 1 to 1000.",
		example: 100,
	},
);

export const orderParam = documented(z.enum(["asc", "desc"], { error: "must be asc or desc" }), {
	schema: { type: "string", enum: ["asc", "desc"], default: "asc" },
	description: "Chain order (`asc`: oldest first) or its reverse (`desc`).",
	example: "desc",
});
export const formatParam = documented(
	z.enum(["json", "ndjson", "csv", "arrow"], { error: "must be json, ndjson, csv or arrow" }),
	{
		schema: { type: "string", enum: ["json", "ndjson", "csv", "arrow"] },
		description:
			"The answer's format: the JSON envelope, or one row per item (NDJSON, CSV, Arrow IPC stream) with the paging state in the X-Has-More, X-Next-Offset, X-Start-Block and X-End-Block headers. Default: what the Accept header asks for, else `json`.",
		example: "csv",
	},
);
export const booleanParam = documented(
	z.enum(["true", "false"], { error: "must be true or false" }).transform((v) => v === "true"),
	{ schema: { type: "boolean", default: false }, description: "`true` or `false`.", example: true },
);

/** The range, paging and output parameters every list endpoint shares. */
/** batchSize, which the official clients send next to limit. */
export const BATCH_SIZE: ParamDoc = {
	schema: { type: "integer" },
	description: "Accepted and ignored: the official clients send their page size here. Use `limit`.",
	example: 100,
};

const RANGE_FORMS =
	"The range is one of: `block_number_start` and `block_number_end`, `timestamp_start` and `timestamp_end`, or `block_hash`; none: the whole history (GET /blocks needs one).";
export const listQuery = {
	block_number_start: describedAs(
		blockNumberParam,
		`First block of the range: its number, a negative number (that many blocks before the newest stored) or \`latest\`. ${RANGE_FORMS}`,
		{ example: -1000 },
	).optional(),
	block_number_end: describedAs(
		blockNumberParam,
		"Last block of the range, included: its number, a negative number (that many blocks before the newest stored) or `latest`. Past the newest block stored, the range ends there.",
		{ example: "latest" },
	).optional(),
	timestamp_start: describedAs(
		timestampParam,
		`The range starts at the first block at or after this time (Unix seconds). ${RANGE_FORMS}`,
	).optional(),
	timestamp_end: describedAs(
		timestampParam,
		"The range ends at the last block at or before this time (Unix seconds).",
		{ example: 1_700_086_400 },
	).optional(),
	block_hash: describedAs(hashParam, `The range is this one block. ${RANGE_FORMS}`, {
		example: EXAMPLE.block,
	}).optional(),
	limit: limitParam.optional(),
	offset: documented(
		text("the next_offset of the previous page").max(100, "must be the next_offset of the previous page"),
		{
			schema: { type: "string", maxLength: 100 },
			description:
				"Where the page starts: `range.next_offset` of the previous page (the id of its last item), with the same range. Omit for the first page.",
			example: "0000000000b2d05e-0042-00000007",
		},
	).optional(),
	order: orderParam.optional(),
	format: formatParam.optional(),
	// The official clients forward their page size as batchSize next to limit: accepted, unused.
	batchSize: documented(text("a number"), BATCH_SIZE).optional(),
};

/** The chain_id path parameter of every data route (whichever parser a route gives it). */
export const CHAIN_ID: ParamDoc = {
	schema: { type: "string", pattern: "^eip155-\\d{1,16}$" },
	description: "The chain: `eip155-` and its chain number (1: Ethereum mainnet). GET /readyz lists the chains served.",
	example: "eip155-1",
};
export const chainParams = z.object({
	chain_id: documented(
		text("a chain id").regex(/^eip155-\d{1,16}$/, "must be eip155-<chain number>, e.g. eip155-1"),
		CHAIN_ID,
	),
});

export type ListQuery = {
	block_number_start?: string;
	block_number_end?: string;
	timestamp_start?: string;
	timestamp_end?: string;
	block_hash?: string;
	limit?: number;
	offset?: string;
	order?: "asc" | "desc";
	format?: "json" | "ndjson" | "csv" | "arrow";
};

/** asset_type: native, ft, nft, multi (ERC-1155 only), comma-separated. */
const ASSETS = ["native", "ft", "nft", "multi"] as const;
const ASSET_KINDS =
	"Kinds of transfer, comma-separated: `native` (the chain's currency), `ft` (ERC-20), `nft` (ERC-721 and ERC-1155), `multi` (ERC-1155 only).";
export const assetList = documented(
	z
		.string({ error: (i) => (Array.isArray(i.input) ? "give this parameter once" : "must be a list") })
		.transform((s) => s.split(",").map((a) => a.trim()))
		.refine(
			(l) => l.every((a) => (ASSETS as readonly string[]).includes(a)),
			"must be native, ft, nft or multi, comma-separated",
		)
		.transform((l) => [...new Set(l)] as AssetFilter[]),
	{
		schema: { type: "array", items: { type: "string", enum: [...ASSETS] }, minItems: 1 },
		description: ASSET_KINDS,
		example: ["native", "ft"],
	},
);
/** A route's asset_type, with what the route lists without one. */
export const assetTypes = (byDefault: string, more: Parameters<typeof describedAs>[2] = {}) =>
	describedAs(assetList, `${ASSET_KINDS} Default: ${byDefault}.`, more);
