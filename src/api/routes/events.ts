import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { type EventFilter, findEvents } from "../../query/transactions.js";
import { flattenItem } from "../answers/list-columns.js";
import { envelope, pageOf } from "../answers/list-reply.js";
import { LOG_RECORD_JSON } from "../answers/record-json.js";
import { LOG_COLUMNS, logRecord } from "../answers/records.js";
import {
	checkSize,
	csvLine,
	csvRow,
	DEFAULT_MAX_RESPONSE_BYTES,
	listFormat,
	RECORD_TEXT,
	sendList,
	sendRecordsText,
} from "../answers/send-list.js";
import { type ApiContext, openChain } from "../context.js";
import { badRequest } from "../errors.js";
import { describedAs, documented } from "../params/param-docs.js";
import { addressList, addressParam, chainParams, EXAMPLE, hashList, listQuery } from "../params/params.js";
import { resolveRange } from "../params/range.js";

/*
 * Logs by contract, topics or origin: GET /events, one page at a time, and
 * /csv-exports/events, the same rows as one CSV file (the official clients' logs.csvExport).
 */

/** topic_1..3 of /events: an indexed argument, 32 bytes (an address left-padded with zeros). */
const topicList = (n: number) =>
	describedAs(
		hashList,
		`Only logs whose topic ${n} (an indexed argument) is one of these, comma-separated, at most 20.`,
		{
			example: [`0x000000000000000000000000${EXAMPLE.wallet.slice(2)}`],
		},
	).optional();

export function eventRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	r.get(
		"/:chain_id/v1/events",
		{
			schema: {
				summary: "Logs by contract, topics or origin",
				description:
					"At least one of contract, topic_0, origin; contract and topic_0..3 take comma-separated lists; op_code (LOG0..LOG4) keeps the logs with that many topics. Example: /eip155-1/v1/events?contract=0x...&topic_0=0xddf252ad...",
				tags: ["events"],
				params: chainParams,
				querystring: z.object({ ...listQuery, ...eventFilters }).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const filter = eventFilterOf(q);
			const range = await resolveRange(db, q);
			const page = pageOf(q, range);
			// JSON and NDJSON: each log's record written by DuckDB (record-json.ts), the same text.
			const format = listFormat(q.format, req.headers.accept);
			if (format === "json" || format === "ndjson") {
				const text = await findEvents(db, filter, page, `id, ${LOG_RECORD_JSON} AS ${RECORD_TEXT}`);
				return sendRecordsText(reply, format, range, text);
			}
			const result = await findEvents(db, filter, page);
			return sendList(reply, q.format, envelope(range, result, logRecord), LOG_COLUMNS);
		},
	);

	r.get(
		"/:chain_id/v1/csv-exports/events",
		{
			schema: {
				summary: "Logs as one CSV file (the official clients' logs.csvExport)",
				description:
					"The rows of /events (same filters, range, order and columns) as text/csv, every page of the range in one answer up to the server's answer size limit (--max-response-mb). X-Has-More says whether rows were left out: resume with offset = X-Next-Offset (the id of the last row sent). cu_limit is accepted and unused. Example: /eip155-1/v1/csv-exports/events?block_number_start=0&block_number_end=latest&contract=0x...",
				tags: ["events"],
				params: chainParams,
				querystring: z.object({ ...exportQuery, ...eventFilters }).strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req);
			const q = req.query;
			const filter = eventFilterOf(q);
			const range = await resolveRange(db, q);
			const cap = reply.server.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
			const lines = [csvLine(LOG_COLUMNS)];
			let size = Buffer.byteLength(lines[0] as string);
			let page = pageOf({ ...q, limit: EXPORT_PAGE_ROWS }, range);
			let next: string | null = null;
			// Page after page until the range is done or the next row would pass the cap: the
			// whole answer is built before it is sent, so a failure is still an error status.
			for (let more = true; more && next === null; ) {
				const result = await findEvents(db, filter, page);
				for (const row of result.rows) {
					const line = csvRow(flattenItem(logRecord(row)), LOG_COLUMNS);
					const bytes = Buffer.byteLength(line);
					if (size + bytes > cap) {
						// Not even one row fits: the same 400 as a list page too large to send.
						if (lines.length === 1) checkSize(size + bytes, cap, 1);
						next = page.after as string;
						break;
					}
					lines.push(line);
					size += bytes;
					page = { ...page, after: row.id as string };
				}
				more = result.hasMore;
			}
			return reply
				.header("X-Has-More", String(next !== null))
				.header("X-Next-Offset", next ?? "")
				.header("X-Start-Block", String(range.start))
				.header("X-End-Block", String(range.end))
				.header("Content-Disposition", `attachment; filename="${db.chain}-events-${range.start}-${range.end}.csv"`)
				.type("text/csv; charset=utf-8")
				.send(Readable.from(lines));
		},
	);
}

/** Rows of an export read a page at a time (the largest list page). */
const EXPORT_PAGE_ROWS = 1000;

/** The log filters of /events and its CSV export (the official clients' TsunamiLogsCriteria). */
const eventFilters = {
	contract: describedAs(addressList, "Only logs these contracts emitted, comma-separated, at most 20.").optional(),
	origin: describedAs(addressParam, "Only logs of transactions sent by this address (their from).").optional(),
	topic_0: describedAs(
		hashList,
		"Only logs whose topic 0 (the event's signature hash) is one of these, comma-separated, at most 20.",
	).optional(),
	topic_1: topicList(1),
	topic_2: topicList(2),
	topic_3: topicList(3),
	op_code: documented(
		z.enum(["LOG0", "LOG1", "LOG2", "LOG3", "LOG4"], {
			error: "must be LOG0, LOG1, LOG2, LOG3 or LOG4 (the opcode that emitted the log: its number of topics)",
		}),
		{
			schema: { type: "string", enum: ["LOG0", "LOG1", "LOG2", "LOG3", "LOG4"] },
			description: "Only logs emitted by this opcode, that is with this many topics.",
			example: "LOG3",
		},
	).optional(),
};

/** An export's range, offset and order; no limit (it sends the whole range) nor format (CSV). */
const { limit: _limit, format: _format, batchSize: _batchSize, ...exportRange } = listQuery;
const exportQuery = {
	...exportRange,
	// The official clients' compute-unit budget of an export: accepted, unused (the server's
	// answer size limit bounds an export here).
	cu_limit: documented(z.string({ error: "must be a whole number" }).regex(/^\d{1,15}$/, "must be a whole number"), {
		schema: { type: "integer", minimum: 0, maximum: 999_999_999_999_999 },
		description: "Accepted and unused: the server's answer size limit (--max-response-mb) bounds an export.",
		example: 1000,
	}).optional(),
};

type EventQuery = { [K in keyof typeof eventFilters]?: z.output<(typeof eventFilters)[K]> };

function eventFilterOf(q: EventQuery): EventFilter {
	if (!q.contract && !q.topic_0 && !q.origin) {
		throw badRequest("MISSING_FILTER", "give at least one of contract, topic_0, origin");
	}
	return {
		contracts: q.contract,
		origin: q.origin,
		topics: [q.topic_0, q.topic_1, q.topic_2, q.topic_3],
		topicCount: q.op_code === undefined ? undefined : Number(q.op_code.slice(3)),
	};
}
