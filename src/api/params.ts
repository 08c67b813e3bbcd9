import { z } from "zod";
import type { AssetFilter } from "../query/transfers.js";

/** Query values arrive as strings; a repeated parameter arrives as an array and is refused. */
const text = (what: string) =>
	z.string({
		error: (iss) => (Array.isArray(iss.input) ? "give this parameter once" : `must be ${what}`),
	});

export const addressParam = text("an address")
	.regex(/^0x[0-9a-fA-F]{40}$/, "must be an address: 0x followed by 40 hex digits")
	.transform((a) => a.toLowerCase());

export const hashParam = text("a hash")
	.regex(/^0x[0-9a-fA-F]{64}$/, "must be a hash: 0x followed by 64 hex digits")
	.transform((h) => h.toLowerCase());

/** Comma-separated addresses, at most 20 (api-contract.md §5). */
/** Comma-separated 32-byte hashes or topics, at most 20. */
/** A comma-separated list of at most 20 values of one format, checked as given, then lowercased. */
const hexList = (what: string, format: RegExp) =>
	text(`a comma-separated list of ${what}`)
		.transform((s) => s.split(",").map((v) => v.trim()))
		.refine((list) => list.length <= 20, "takes at most 20 values")
		.refine((list) => list.every((v) => format.test(v)), `must be ${what}, comma-separated`)
		.transform((list) => list.map((v) => v.toLowerCase()));

export const hashList = hexList("hashes (0x + 64 hex digits)", /^0x[0-9a-fA-F]{64}$/);
export const addressList = hexList("addresses (0x + 40 hex digits)", /^0x[0-9a-fA-F]{40}$/);
export const selectorList = hexList("4-byte selectors (0x + 8 hex digits, e.g. 0xa9059cbb)", /^0x[0-9a-fA-F]{8}$/);

export const blockNumberParam = text("a block number").regex(
	/^(latest|-?\d{1,15})$/,
	"must be a block number, a negative number (blocks before the head) or latest",
);
export const timestampParam = text("a unix timestamp").regex(/^\d{1,12}$/, "must be unix seconds");

export const limitParam = text("a number")
	.regex(/^-?\d+$/, "must be a whole number from 1 to 1000 (default 100)")
	.transform(Number)
	.refine((n) => n >= 1 && n <= 1000, "must be from 1 to 1000 (default 100)");

export const orderParam = z.enum(["asc", "desc"], { error: "must be asc or desc" });
export const formatParam = z.enum(["json", "ndjson", "csv", "arrow"], { error: "must be json, ndjson, csv or arrow" });
export const booleanParam = z
	.enum(["true", "false"], { error: "must be true or false" })
	.transform((v) => v === "true");

/** The range, paging and output parameters every list endpoint shares. */
export const listQuery = {
	block_number_start: blockNumberParam.optional(),
	block_number_end: blockNumberParam.optional(),
	timestamp_start: timestampParam.optional(),
	timestamp_end: timestampParam.optional(),
	block_hash: hashParam.optional(),
	limit: limitParam.optional(),
	offset: text("the next_offset of the previous page")
		.max(100, "must be the next_offset of the previous page")
		.optional(),
	order: orderParam.optional(),
	format: formatParam.optional(),
	// The official clients forward their page size as batchSize next to limit: accepted, unused.
	batchSize: text("a number").optional(),
};

export const chainParams = z.object({
	chain_id: text("a chain id").regex(/^eip155-\d{1,16}$/, "must be eip155-<chain number>, e.g. eip155-1"),
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
export const assetList = z
	.string({ error: (i) => (Array.isArray(i.input) ? "give this parameter once" : "must be a list") })
	.transform((s) => s.split(",").map((a) => a.trim()))
	.refine(
		(l) => l.every((a) => (ASSETS as readonly string[]).includes(a)),
		"must be native, ft, nft or multi, comma-separated",
	)
	.transform((l) => [...new Set(l)] as AssetFilter[]);
