import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { findBlockByHash, findGhostBlock, latestBlock, listBlocks } from "../../query/blocks.js";
import { DEFAULT_LIMIT, envelope } from "../answers/list-reply.js";
import { BLOCK_RECORD_JSON } from "../answers/record-json.js";
import { BLOCK_COLUMNS, blockRecord } from "../answers/records.js";
import { listFormat, RECORD_TEXT, sendList, sendRecordsText } from "../answers/send-list.js";
import { type ApiContext, openChain } from "../context.js";
import { badRequest, notFound } from "../errors.js";
import { immutableUpTo } from "../http-cache.js";
import { describedAs } from "../params/param-docs.js";
import { chainParams, EXAMPLE, hashParam, listQuery } from "../params/params.js";
import { headBlock, resolveRange } from "../params/range.js";

export function blockRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	r.get(
		"/:chain_id/v1/blocks/latest",
		{
			schema: {
				summary: "Latest block",
				description: "The newest block stored. Example: /eip155-1/v1/blocks/latest",
				tags: ["blocks"],
				params: chainParams,
				querystring: z.object({}).strict(),
			},
		},
		async (req) => {
			const db = openChain(ctx, req);
			const chain = db.chain;
			await headBlock(db); // 503 NO_DATA before the first block is stored
			const block = await latestBlock(db);
			if (!block) throw notFound("BLOCK_NOT_FOUND", `no latest block on ${chain}`);
			return blockRecord(block);
		},
	);

	r.get(
		"/:chain_id/v1/blocks/:block_hash",
		{
			schema: {
				summary: "Block by hash",
				description:
					"A canonical block, or a block reorged out of the chain (ghost: true). Example: /eip155-1/v1/blocks/0x<64 hex digits>",
				tags: ["blocks"],
				params: chainParams.extend({
					block_hash: describedAs(hashParam, "The block's hash.", { example: EXAMPLE.block }),
				}),
				querystring: z.object({}).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const chain = db.chain;
			const block = await findBlockByHash(db, req.params.block_hash);
			if (block) {
				immutableUpTo(reply, Number(block.number));
				return blockRecord(block);
			}
			// A block reorged out of the chain is still known by its hash.
			const ghost = await findGhostBlock(db, req.params.block_hash);
			if (ghost) return blockRecord(ghost, true);
			throw notFound("BLOCK_NOT_FOUND", `no block with hash ${req.params.block_hash} on ${chain}`);
		},
	);

	r.get(
		"/:chain_id/v1/blocks",
		{
			schema: {
				summary: "Blocks of a range",
				description:
					"Needs a range (block numbers or timestamps). Pages by block hash: offset = next_offset. Example: /eip155-1/v1/blocks?block_number_start=-10&block_number_end=latest",
				tags: ["blocks"],
				params: chainParams,
				querystring: z
					.object({
						...listQuery,
						offset: describedAs(
							hashParam,
							"Where the page starts: `range.next_offset` of the previous page (the hash of its last block), with the same range. Omit for the first page.",
							{ example: EXAMPLE.block },
						).optional(),
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const range = await resolveRange(db, q, { required: true });
			let after: number | undefined;
			if (q.offset !== undefined) {
				const seen = await findBlockByHash(db, q.offset);
				if (!seen)
					throw badRequest("INVALID_OFFSET", "offset must be the next_offset (a block hash) of the previous page");
				after = Number(seen.number);
			}
			const page = {
				start: range.start,
				end: range.end,
				limit: q.limit ?? DEFAULT_LIMIT,
				order: q.order ?? "asc",
				after,
			};
			// JSON and NDJSON: each block's record written by DuckDB (record-json.ts), the same text.
			const format = listFormat(q.format, req.headers.accept);
			if (format === "json" || format === "ndjson") {
				const text = await listBlocks(db, page, `number, hash, ${BLOCK_RECORD_JSON} AS ${RECORD_TEXT}`);
				return sendRecordsText(reply, format, range, text, (last) => last.hash as string);
			}
			const result = await listBlocks(db, page);
			return sendList(
				reply,
				q.format,
				envelope(
					range,
					result,
					(row) => blockRecord(row),
					(last) => last.hash as string,
				),
				BLOCK_COLUMNS,
			);
		},
	);
}
