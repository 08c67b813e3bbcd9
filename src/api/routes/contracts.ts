import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { DatasetName } from "../../extract/rows.js";
import { findCalls, findCreations, findSelfDestructs } from "../../query/contracts.js";
import type { Row, Snapshot } from "../../query/store.js";
import { type EventFilter, findEvents, logsOfTransactions } from "../../query/transactions.js";
import { findTransfers } from "../../query/transfers.js";
import { flattenItem } from "../answers/list-columns.js";
import { envelope, pageOf } from "../answers/list-reply.js";
import {
	CALL_COLUMNS,
	CREATION_COLUMNS,
	callEventRecord,
	callRecord,
	contextOf,
	creationRecord,
	LOG_COLUMNS,
	logRecord,
	SELF_DESTRUCT_COLUMNS,
	selfDestructRecord,
	TRANSFER_COLUMNS,
	transferRecord,
} from "../answers/records.js";
import { checkSize, csvLine, csvRow, DEFAULT_MAX_RESPONSE_BYTES, sendList } from "../answers/send-list.js";
import { type ApiContext, openChain } from "../context.js";
import { ApiError, badRequest } from "../errors.js";
import { describedAs, documented } from "../params/param-docs.js";
import {
	addressList,
	addressParam,
	assetTypes,
	booleanParam,
	chainParams,
	EXAMPLE,
	hashList,
	listQuery,
	selectorList,
} from "../params/params.js";
import { resolveRange } from "../params/range.js";

const contractQuery = z
	.object({
		...listQuery,
		origin: describedAs(
			addressParam,
			"Only those inside transactions sent by this address (the transaction's from).",
		).optional(),
		caller: describedAs(
			addressParam,
			"Only those this account executed: the CREATE or CREATE2 (the sender, for a deploying transaction), or the call that self-destructed the contract.",
		).optional(),
		sender: describedAs(addressParam, "Another name for `caller`.").optional(),
		contract: describedAs(
			addressList,
			"Only these contracts (created, or destroyed), comma-separated, at most 20.",
		).optional(),
	})
	.strict();

const CALL_TYPES = ["call", "delegatecall", "staticcall", "callcode", "create", "create2"] as const;

/** topic_1..3 of /events: an indexed argument, 32 bytes (an address left-padded with zeros). */
const topicList = (n: number) =>
	describedAs(
		hashList,
		`Only logs whose topic ${n} (an indexed argument) is one of these, comma-separated, at most 20.`,
		{
			example: [`0x000000000000000000000000${EXAMPLE.wallet.slice(2)}`],
		},
	).optional();

/** Trace-only datasets are absent (not empty) for chains exported without traces: say so. */
export function requireTraces(db: Snapshot, dataset: DatasetName) {
	const chain = db.chain;
	if (!db.hasDataset(dataset)) {
		throw new ApiError(
			503,
			"TRACES_UNAVAILABLE",
			`${chain} was exported without traces, so ${dataset} is unavailable; backfill it from a node with trace_block or debug_traceBlockByNumber`,
		);
	}
}

export function contractRoutes(app: FastifyInstance, ctx: ApiContext) {
	const r = app.withTypeProvider<ZodTypeProvider>();

	for (const [path, dataset, find, record, columns, summary] of [
		["creates", "contract_creations", findCreations, creationRecord, CREATION_COLUMNS, "Contract creations"],
		[
			"self-destructs",
			"self_destructs",
			findSelfDestructs,
			selfDestructRecord,
			SELF_DESTRUCT_COLUMNS,
			"Contract self-destructs",
		],
	] as const) {
		r.get(
			`/:chain_id/v1/contracts/${path}`,
			{
				schema: {
					summary,
					description: `At least one of origin, caller (or its alias sender), contract. Example: /eip155-1/v1/contracts/${path}?caller=0x...&limit=100`,
					tags: ["contracts"],
					params: chainParams,
					querystring: contractQuery,
				},
			},
			async (req, reply) => {
				const db = openChain(ctx, req.params.chain_id);
				const q = req.query;
				if (q.caller && q.sender && q.caller !== q.sender) {
					throw badRequest(
						"INVALID_PARAMETER",
						"sender is another name for caller: give one of them, or the same address",
					);
				}
				const caller = q.caller ?? q.sender;
				if (!q.origin && !caller && !q.contract) {
					throw badRequest("MISSING_FILTER", "give at least one of origin, caller (or sender), contract");
				}
				requireTraces(db, dataset);
				const range = await resolveRange(db, q);
				const result = await find(db, { origin: q.origin, caller, contracts: q.contract }, pageOf(q, range));
				return sendList(reply, q.format, envelope<object>(range, result, record), columns);
			},
		);
	}

	r.get(
		"/:chain_id/v1/contract/:contract/transfers",
		{
			schema: {
				summary: "Transfers of a token contract",
				description:
					"Every transfer of the token (all asset types unless asset_type is given). Example: /eip155-1/v1/contract/0x.../transfers?limit=100",
				tags: ["transfers"],
				params: chainParams.extend({
					contract: describedAs(addressParam, "The token contract.", { example: EXAMPLE.token }),
				}),
				querystring: z
					.object({
						...listQuery,
						asset_type: assetTypes("all of them", { example: ["ft"] }).optional(),
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req.params.chain_id);
			const range = await resolveRange(db, req.query);
			const result = await findTransfers(
				db,
				{ token: req.params.contract, assets: req.query.asset_type },
				pageOf(req.query, range),
			);
			return sendList(reply, req.query.format, envelope(range, result, transferRecord), TRANSFER_COLUMNS);
		},
	);

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
			const db = openChain(ctx, req.params.chain_id);
			const q = req.query;
			const filter = eventFilterOf(q);
			const range = await resolveRange(db, q);
			const result = await findEvents(db, filter, pageOf(q, range));
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
			const db = openChain(ctx, req.params.chain_id);
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

	r.get(
		"/:chain_id/v1/calls",
		{
			schema: {
				summary: "Calls (trace frames) by caller, callee, origin or selector",
				description:
					"Internal and top-level calls, creates and self-destructs from traces. At least one of contract (or to; the callee, a list), sender (or from; the caller), origin, sig_hash (4-byte selectors the call data starts with, a list). include_events=true adds each call's events: the logs of its transaction emitted as the contract the call ran as (none for a reverted call). Example: /eip155-1/v1/calls?contract=0x...&sig_hash=0xa9059cbb,0x23b872dd&include_events=true",
				tags: ["events"],
				params: chainParams,
				querystring: z
					.object({
						...listQuery,
						from: describedAs(addressParam, "Only calls this account made (the frame's caller).").optional(),
						sender: describedAs(addressParam, "Another name for `from`.").optional(),
						to: describedAs(addressParam, "Only calls to this address (the callee); with `contract`, to any of them.", {
							example: EXAMPLE.token,
						}).optional(),
						contract: describedAs(
							addressList,
							"Only calls to these addresses (the callees), comma-separated, at most 20.",
						).optional(),
						origin: describedAs(
							addressParam,
							"Only calls inside transactions sent by this address (their from).",
						).optional(),
						sig_hash: describedAs(
							selectorList,
							"Only calls whose input starts with one of these 4-byte function selectors (0x and 8 hex digits), comma-separated, at most 20.",
						).optional(),
						include_events: describedAs(
							booleanParam,
							"`true`: each call gets `events`, the logs its transaction emitted as the contract the call ran as (none for a reverted call).",
						).optional(),
						call_type: documented(
							z.enum(CALL_TYPES, {
								error: "must be call, delegatecall, staticcall, callcode, create or create2",
							}),
							{
								schema: { type: "string", enum: [...CALL_TYPES] },
								description: "Only frames of this kind. Default: all.",
								example: "delegatecall",
							},
						).optional(),
					})
					.strict(),
			},
		},
		async (req, reply) => {
			const db = openChain(ctx, req.params.chain_id);
			const q = req.query;
			if (q.from && q.sender && q.from !== q.sender) {
				throw badRequest("INVALID_PARAMETER", "sender is another name for from: give one of them, or the same address");
			}
			const callees = [...(q.contract ?? []), ...(q.to ? [q.to] : [])];
			const caller = q.from ?? q.sender;
			if (!caller && callees.length === 0 && !q.origin && !q.sig_hash) {
				throw badRequest("MISSING_FILTER", "give at least one of contract (or to), sender (or from), origin, sig_hash");
			}
			requireTraces(db, "traces");
			const range = await resolveRange(db, q);
			const result = await findCalls(
				db,
				{ from: caller, to: callees, origin: q.origin, callType: q.call_type, selectors: q.sig_hash },
				pageOf(q, range),
			);
			if (!q.include_events) return sendList(reply, q.format, envelope(range, result, callRecord), CALL_COLUMNS);
			const logs = await logsOfTransactions(db, uniqueTransactions(result.rows));
			const withEvents = (call: Row) => ({
				...callRecord(call),
				// A reverted frame's logs were discarded with it: the receipt has none of them.
				events:
					Number(call.status) === 1
						? logs
								.filter((l) => l.transaction_hash === call.transaction_hash && l.address === contextOf(call))
								.map(callEventRecord)
						: [],
			});
			return sendList(reply, q.format, envelope(range, result, withEvents), [...CALL_COLUMNS, "events"]);
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

/** Each transaction of a page's rows once, for the logs of the page. */
function uniqueTransactions(rows: Row[]): Row[] {
	const seen = new Map<string, Row>();
	for (const r of rows) if (!seen.has(String(r.transaction_hash))) seen.set(String(r.transaction_hash), r);
	return [...seen.values()];
}
