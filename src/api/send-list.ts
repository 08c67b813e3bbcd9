import { Readable } from "node:stream";
import { Float64, Table, tableToIPC, Utf8, vectorFromArray } from "apache-arrow";
import type { FastifyReply } from "fastify";
import { ApiError } from "./errors.js";
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
	range: { has_more: boolean; start_block: number; end_block: number; next_offset: string | null };
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
 * a 400 before anything is sent.
 */
export function sendList(reply: FastifyReply, format: ListFormat | undefined, body: ListBody) {
	const chosen = listFormat(format, reply.request.headers.accept);
	const cap = reply.server.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
	if (chosen === "json") {
		const text = stringifyExact(body);
		checkSize(Buffer.byteLength(text), cap, body.items.length);
		return reply.type("application/json; charset=utf-8").send(text);
	}
	let payload: Readable | Buffer;
	if (chosen === "ndjson") {
		const lines = body.items.map((item) => `${stringifyExact(item)}\n`);
		checkSize(byteLength(lines), cap, body.items.length);
		payload = Readable.from(lines);
	} else {
		const rows = body.items.map((item) => flatten(item));
		const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
		if (chosen === "csv") {
			const lines = [columns.join(","), ...rows.map((r) => columns.map((c) => csvCell(r[c])).join(","))].map(
				(l) => `${l}\n`,
			);
			checkSize(byteLength(lines), cap, body.items.length);
			payload = Readable.from(lines);
		} else {
			payload = Buffer.from(tableToIPC(arrowTable(columns, rows), "stream"));
			checkSize(payload.length, cap, body.items.length);
		}
	}
	return reply
		.header("X-Has-More", String(body.range.has_more))
		.header("X-Next-Offset", body.range.next_offset ?? "")
		.header("X-Start-Block", String(body.range.start_block))
		.header("X-End-Block", String(body.range.end_block))
		.type(MEDIA[chosen])
		.send(payload);
}

const byteLength = (lines: string[]) => lines.reduce((n, l) => n + Buffer.byteLength(l), 0);

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(n < 1024 * 1024 ? 3 : 1)} MiB`;

/** A 400 RESPONSE_TOO_LARGE saying how many items would fit, when `size` is above `cap`. */
function checkSize(size: number, cap: number, items: number) {
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

/** Nested objects become dotted columns; arrays and bigints become exact JSON text. */
function flatten(item: object, prefix = "", out: Record<string, unknown> = {}): Record<string, unknown> {
	for (const [k, v] of Object.entries(item)) {
		const key = prefix ? `${prefix}.${k}` : k;
		if (v !== null && typeof v === "object" && !Array.isArray(v)) flatten(v, key, out);
		else out[key] = v;
	}
	return out;
}

function cellText(v: unknown): string | null {
	if (v == null) return null;
	if (typeof v === "string") return v;
	if (typeof v === "bigint" || typeof v === "number" || typeof v === "boolean") return String(v);
	return stringifyExact(v);
}

function csvCell(v: unknown): string {
	const t = cellText(v);
	if (t == null) return "";
	return /[",\n\r]/.test(t) ? `"${t.replaceAll('"', '""')}"` : t;
}

/** Numbers stay numeric columns (all are below 2^53); everything else, amounts included, is text. */
function arrowTable(columns: string[], rows: Record<string, unknown>[]): Table {
	const vectors = Object.fromEntries(
		columns.map((c) => {
			const values = rows.map((r) => r[c]);
			const numeric = values.every((v) => v == null || typeof v === "number");
			return [
				c,
				numeric
					? vectorFromArray(values as (number | null)[], new Float64())
					: vectorFromArray(values.map(cellText), new Utf8()),
			];
		}),
	);
	return new Table(vectors);
}
