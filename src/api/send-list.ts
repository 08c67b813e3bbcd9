import { Readable } from "node:stream";
import { Float64, Table, tableToIPC, Utf8, vectorFromArray } from "apache-arrow";
import type { FastifyReply } from "fastify";
import { stringifyExact } from "./records.js";

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
 */
export function sendList(reply: FastifyReply, format: ListFormat | undefined, body: ListBody) {
	const chosen = listFormat(format, reply.request.headers.accept);
	if (chosen === "json") return reply.send(body);
	reply
		.header("X-Has-More", String(body.range.has_more))
		.header("X-Next-Offset", body.range.next_offset ?? "")
		.header("X-Start-Block", String(body.range.start_block))
		.header("X-End-Block", String(body.range.end_block))
		.type(MEDIA[chosen]);
	if (chosen === "ndjson") {
		return reply.send(Readable.from(body.items.map((item) => `${stringifyExact(item)}\n`)));
	}
	const rows = body.items.map((item) => flatten(item));
	const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
	if (chosen === "csv") {
		const lines = [columns.join(","), ...rows.map((r) => columns.map((c) => csvCell(r[c])).join(","))];
		return reply.send(Readable.from(lines.map((l) => `${l}\n`)));
	}
	return reply.send(Buffer.from(tableToIPC(arrowTable(columns, rows), "stream")));
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
