import { findBlockByHash } from "../../query/blocks.js";
import type { Snapshot } from "../../query/store/store.js";
import { ApiError, badRequest, notFound } from "../errors.js";
import type { ListQuery } from "./params.js";

export interface ResolvedRange {
	start: number;
	end: number;
}

/** The newest block stored for a chain (from the manifest, no file read); 503 while there is none. */
export async function headBlock(db: Snapshot): Promise<number> {
	const head = db.head();
	if (head == null) throw new ApiError(503, "NO_DATA", `${db.chain} has no blocks stored yet; run a backfill first`);
	return head;
}

/**
 * Resolves the range parameters of api-contract.md §4 to absolute block numbers: exactly one
 * form (numbers, timestamps, block hash) or none (the whole history, unless `required`).
 * `latest` and negative numbers count back from the head; an end past the head is clamped.
 */
export async function resolveRange(
	db: Snapshot,
	q: ListQuery,
	opts: { required?: boolean } = {},
): Promise<ResolvedRange> {
	const numbers = q.block_number_start !== undefined || q.block_number_end !== undefined;
	const times = q.timestamp_start !== undefined || q.timestamp_end !== undefined;
	const hash = q.block_hash !== undefined;
	const forms = [numbers, times, hash].filter(Boolean).length;
	if (forms > 1) {
		throw badRequest(
			"INVALID_RANGE",
			"give one range form only: block_number_start+block_number_end, timestamp_start+timestamp_end, or block_hash",
		);
	}
	if (forms === 0 && opts.required) {
		throw badRequest(
			"RANGE_REQUIRED",
			"this endpoint needs a range: block_number_start and block_number_end (e.g. -100 and latest), or timestamp_start and timestamp_end",
		);
	}
	const head = await headBlock(db);
	if (numbers) {
		if (q.block_number_start === undefined || q.block_number_end === undefined) {
			throw badRequest("INVALID_RANGE", "give both block_number_start and block_number_end (the end may be latest)");
		}
		const resolve = (v: string) => (v === "latest" ? head : Number(v) < 0 ? head + Number(v) : Number(v));
		const start = Math.max(0, resolve(q.block_number_start));
		const end = Math.min(head, resolve(q.block_number_end));
		if (resolve(q.block_number_start) > resolve(q.block_number_end)) {
			throw badRequest(
				"INVALID_RANGE",
				`block_number_end (${q.block_number_end}) is before block_number_start (${q.block_number_start})`,
			);
		}
		// A start before genesis means "from genesis"; an end before it leaves no block at all.
		if (end < 0) {
			throw badRequest(
				"INVALID_RANGE",
				`block_number_end (${q.block_number_end}) is before genesis: the head is ${head}, so a negative end may go back at most -${head}`,
			);
		}
		return { start, end };
	}
	if (times) {
		if (q.timestamp_start === undefined || q.timestamp_end === undefined) {
			throw badRequest("INVALID_RANGE", "give both timestamp_start and timestamp_end (unix seconds)");
		}
		const [from, to] = [Number(q.timestamp_start), Number(q.timestamp_end)];
		if (from > to) {
			throw badRequest("INVALID_RANGE", `timestamp_end (${to}) is before timestamp_start (${from})`);
		}
		const [row] = await db.query(
			"SELECT min(number) AS first, max(number) AS last FROM {blocks} WHERE timestamp BETWEEN $from AND $to",
			{ from, to },
		);
		// No block in the window: an empty range just past its end.
		if (row?.first == null) return { start: 1, end: 0 };
		return { start: Number(row.first), end: Number(row.last) };
	}
	if (hash) {
		// Through the block hash index (one small row group) where the chunks have it.
		const row = await findBlockByHash(db, q.block_hash as string);
		if (!row) throw notFound("BLOCK_NOT_FOUND", `no block with hash ${q.block_hash} on ${db.chain}`);
		return { start: Number(row.number), end: Number(row.number) };
	}
	return { start: 0, end: head };
}
