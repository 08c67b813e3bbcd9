import { z } from "zod";

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
export const addressList = text("a comma-separated list of addresses")
	.transform((s) => s.split(",").map((a) => a.trim().toLowerCase()))
	.refine((list) => list.length <= 20, "takes at most 20 addresses")
	.refine(
		(list) => list.every((a) => /^0x[0-9a-f]{40}$/.test(a)),
		"must be addresses (0x + 40 hex digits), comma-separated",
	);

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
