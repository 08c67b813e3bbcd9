import { z } from "zod";
import type { Snapshot } from "../../query/store/store.js";
import { missingRanges } from "../../store/format/manifest.js";
import { ApiError, badRequest } from "../errors.js";
import { describedAs, documented } from "./param-docs.js";
import { BATCH_SIZE, blockNumberParam, CHAIN_ID, formatParam, limitParam } from "./params.js";
import { headBlock } from "./range.js";

/*
 * What the Balances and NFT routes (routes/balances.ts, routes/nfts.ts) share: their parameters
 * and "as of which block".
 */

export const chainParam = documented(
	z.string().regex(/^eip155-\d{1,16}$/, "must be eip155-<chain number>, e.g. eip155-1"),
	CHAIN_ID,
);
const offsetParam = documented(z.string().max(300, "must be the next_offset of the previous page"), {
	schema: { type: "string", maxLength: 300 },
	description:
		"Where the page starts: `range.next_offset` of the previous page (opaque), with the same `block_number`. Omit for the first page.",
	example: "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48",
});
/** `block_number` of the Balances and NFT routes: the answer as of that block. */
export const asOfBlockParam = describedAs(
	blockNumberParam,
	"The answer as of this block: its number, a negative number (that many blocks before the newest stored) or `latest`. Default: the newest block stored.",
	{ example: 18_000_000 },
);
export const pageQuery = {
	limit: limitParam.optional(),
	offset: offsetParam.optional(),
	block_number: asOfBlockParam.optional(),
	format: formatParam.optional(),
	// The official client forwards its page size as batchSize next to limit: accepted, unused.
	batchSize: documented(z.string(), BATCH_SIZE).optional(),
};

/** No price source: every price field is null (README says so). */
export const NO_PRICE = null;

/** `block_number` (absolute, negative from the head, or latest) → a stored block; balances need the
 * whole history from block 0, so a folder with a gap answers 503 saying which blocks to backfill. */
export async function asOf(db: Snapshot, blockNumber: string | undefined): Promise<number> {
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
