import { Bool, type DataType, Float64, Int64, Table, tableToIPC, Uint64, Utf8, vectorFromArray } from "apache-arrow";
import type { FastifyReply } from "fastify";
import type { ColumnKind } from "../../query/sql/result-columns.js";
import type { Row } from "../../query/store/store.js";
import { ApiError } from "../errors.js";
import { immutableUpTo } from "../http-cache.js";
import type { ResolvedRange } from "../params/range.js";
import { columnKind, flattenItem } from "./list-columns.js";
import { type PageRange, pageRange } from "./list-reply.js";
import { stringifyExact } from "./records.js";

/** Default cap on one list answer: 1000 items of the widest records stay well below it. */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

declare module "fastify" {
	interface FastifyInstance {
		/** The largest list answer this app sends, in bytes (AppOptions.maxResponseBytes). */
		maxResponseBytes: number;
	}
}

export type ListFormat = "json" | "ndjson" | "csv" | "arrow";

const MEDIA: Record<Exclude<ListFormat, "json">, string> = {
	ndjson: "application/x-ndjson",
	csv: "text/csv; charset=utf-8",
	arrow: "application/vnd.apache.arrow.stream",
};

interface ListBody {
	range: PageRange;
	items: object[];
}

/** `format=` wins; otherwise the Accept header picks NDJSON, CSV or Arrow; JSON by default. */
export function listFormat(format: ListFormat | undefined, accept: string | undefined): ListFormat {
	if (format) return format;
	const a = accept ?? "";
	if (a.includes("application/x-ndjson")) return "ndjson";
	if (a.includes("text/csv")) return "csv";
	if (a.includes("application/vnd.apache.arrow.stream")) return "arrow";
	return "json";
}

/**
 * Sends a list in the chosen format. The JSON envelope carries the paging state in its body;
 * the other formats carry one item per line/row and the same state in headers
 * (X-Has-More, X-Next-Offset, X-Start-Block, X-End-Block), so a client pages them alike.
 * The body is built whole first, so one larger than the app's maxResponseBytes is refused with
 * a 400 before anything is sent. `columns`: the route's columns (api/answers/list-columns.ts), which CSV
 * and Arrow answers carry on every page, the empty one too, each with its one type.
 */
export function sendList(
	reply: FastifyReply,
	format: ListFormat | undefined,
	body: ListBody,
	columns: readonly string[],
) {
	const chosen = listFormat(format, reply.request.headers.accept);
	// A page whose blocks are all final never changes (api/http-cache.ts).
	immutableUpTo(reply, body.range.end_block);
	const cap = reply.server.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
	if (chosen === "json") {
		// Encoded once: its size is then known, and the socket is handed bytes, not a string to encode.
		const bytes = Buffer.from(stringifyExact(body));
		checkSize(bytes.length, cap, body.items.length);
		return reply.type("application/json; charset=utf-8").send(bytes);
	}
	// The lines in one buffer, not a stream of them: the page is whole in memory anyway (its size is
	// checked before anything is sent), and each streamed line was a write of its own to the socket.
	let payload: Buffer;
	if (chosen === "ndjson") {
		payload = ndjsonBytes(body.items.map((item) => stringifyExact(item)));
	} else {
		const rows = body.items.map((item) => flattenItem(item));
		// A field the route did not declare still goes out (as its kind, text by default).
		const all = [...new Set([...columns, ...rows.flatMap((r) => Object.keys(r))])];
		payload =
			chosen === "csv"
				? joinedBytes(
						csvLine(all),
						rows.map((r) => csvRow(r, all)),
						"",
						"",
					)
				: Buffer.from(tableToIPC(arrowTable(all, rows), "stream"));
	}
	checkSize(payload.length, cap, body.items.length);
	return withPagingHeaders(reply, body.range).type(MEDIA[chosen]).send(payload);
}

/** The paging state of a list answer that has no envelope (NDJSON, CSV, Arrow), in headers. */
const withPagingHeaders = (reply: FastifyReply, range: PageRange) =>
	reply
		.header("X-Has-More", String(range.has_more))
		.header("X-Next-Offset", range.next_offset ?? "")
		.header("X-Start-Block", String(range.start_block))
		.header("X-End-Block", String(range.end_block));

/** The column a page read for sendRecordsText holds each item's JSON text in. */
export const RECORD_TEXT = "record";

/**
 * Sends a JSON or NDJSON page whose rows hold each item's JSON text already, in RECORD_TEXT
 * (made by DuckDB: record-json.ts): the same bytes sendList writes for the same records, without
 * turning each into an object and back. The same size cap and caching; the paging state as the
 * envelope's (pageRange: `nextOffset` from the last row), for NDJSON in the same headers.
 */
export function sendRecordsText(
	reply: FastifyReply,
	format: "json" | "ndjson",
	range: ResolvedRange,
	result: { rows: Row[]; hasMore: boolean },
	nextOffset?: (last: Row) => string,
) {
	const paging = pageRange(range, result, nextOffset);
	const items = result.rows.map((row) => row[RECORD_TEXT] as string);
	immutableUpTo(reply, paging.end_block);
	const cap = reply.server.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
	if (format === "json") {
		// Encoded once: its size is then known, and the socket is handed bytes, not a string to encode.
		const body = joinedBytes(`{"range":${JSON.stringify(paging)},"items":[`, items, ",", "]}");
		checkSize(body.length, cap, items.length);
		return reply.type("application/json; charset=utf-8").send(body);
	}
	const body = ndjsonBytes(items);
	checkSize(body.length, cap, items.length);
	return withPagingHeaders(reply, paging).type(MEDIA.ndjson).send(body);
}

/**
 * `head`, then `items` separated by `sep`, then `tail`, as UTF-8 written straight into one buffer of
 * their size: the bytes of `Buffer.from(head + items.join(sep) + tail)`. A 1,000-block page (1.3 MB)
 * took 10 ms that way here (the joined string, then the whole text, each a fresh 1.3 MB copy) and
 * 0.2 ms this way (BENCHMARKS.md "twenty-eighth figures").
 */
export function joinedBytes(head: string, items: readonly string[], sep: string, tail: string): Buffer {
	let size = Buffer.byteLength(head) + Buffer.byteLength(tail) + Math.max(0, items.length - 1) * Buffer.byteLength(sep);
	for (const item of items) size += Buffer.byteLength(item);
	const out = Buffer.allocUnsafe(size);
	let at = out.write(head, 0);
	items.forEach((item, i) => {
		if (i > 0) at += out.write(sep, at);
		at += out.write(item, at);
	});
	at += out.write(tail, at);
	// (Buffer.byteLength counts what write writes, lone surrogates as U+FFFD included; never past `size`.)
	return out.subarray(0, at);
}

/** NDJSON: each item's text on a line of its own, every line ended (no bytes for no items). */
const ndjsonBytes = (lines: readonly string[]) => joinedBytes("", lines, "\n", lines.length > 0 ? "\n" : "");

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(n < 1024 * 1024 ? 3 : 1)} MiB`;

/** A 400 RESPONSE_TOO_LARGE saying how many items would fit, when `size` is above `cap`. */
export function checkSize(size: number, cap: number, items: number) {
	if (size <= cap) return;
	const fits = Math.floor((items * cap) / size);
	const how =
		fits >= 1
			? `lower limit to ${fits} or less (this page has ${items} items) or narrow the range, and page on with offset`
			: "a single item is larger than that: narrow the filters, or ask the operator to raise --max-response-mb";
	throw new ApiError(
		400,
		"RESPONSE_TOO_LARGE",
		`this page would be ${mib(size)}, above this server's ${mib(cap)} limit on one answer: ${how}`,
	);
}

function cellText(v: unknown): string | null {
	if (v == null) return null;
	if (typeof v === "string") return v;
	if (typeof v === "bigint" || typeof v === "number" || typeof v === "boolean") return String(v);
	return stringifyExact(v);
}

/** The header line of a CSV answer. */
export const csvLine = (columns: readonly string[]) => `${columns.join(",")}\n`;

/** One flattened item (list-columns.ts flattenItem) as a CSV line of `columns`. */
export const csvRow = (row: Record<string, unknown>, columns: readonly string[]) =>
	`${columns.map((c) => csvCell(row[c])).join(",")}\n`;

export function csvCell(v: unknown): string {
	const t = cellText(v);
	if (t == null) return "";
	return /[",\n\r]/.test(t) ? `"${t.replaceAll('"', '""')}"` : t;
}

const ARROW_TYPES: Record<ColumnKind, () => DataType> = {
	int: () => new Int64(),
	uint64: () => new Uint64(),
	bool: () => new Bool(),
	float: () => new Float64(),
	text: () => new Utf8(),
	json: () => new Utf8(),
};

/** One cell as its column's kind wants it (Int64 and Uint64 take bigints). */
function arrowValue(kind: ColumnKind, v: unknown): unknown {
	if (v == null) return null;
	switch (kind) {
		case "int":
		case "uint64":
			// NaN (a missing field) is null, as JSON writes it; never a thrown RangeError (a 500).
			return typeof v === "number" && !Number.isInteger(v) ? null : BigInt(v as number | bigint | string);
		case "bool":
			return Boolean(v);
		case "float":
			return Number(v);
		default:
			return cellText(v);
	}
}

/** Each column typed by its kind (list-columns.ts, or `kindOf`), whatever the page holds. */
export function arrowTable(
	columns: string[],
	rows: Record<string, unknown>[],
	kindOf: (column: string) => ColumnKind = columnKind,
): Table {
	const vectors = Object.fromEntries(
		columns.map((c) => {
			const kind = kindOf(c);
			return [c, vectorFromArray(rows.map((r) => arrowValue(kind, r[c])) as never[], ARROW_TYPES[kind]())];
		}),
	);
	return new Table(vectors);
}
