import { createHash } from "node:crypto";
import { badRequest } from "../errors.js";

/*
 * A feed's cursor: self-contained (a restart of the service, or another process behind the
 * balancer, resumes it with nothing kept server-side) and bound to its query. It holds the
 * position (after this item id, or from this block), the range as resolved when the stream
 * opened, and two block proofs: the block of the last item (or reorg) it follows, and an anchor
 * at or below it (the feed's lowest block still remembered, a final one once the stream has run).
 * A resume checks the proofs against the chain as stored now: the last one still there, it goes
 * on; only the anchor, it first tells a reorg down to the anchor (the client re-receives the
 * items above it); neither, down to the range's start.
 */

export const CURSOR_VERSION = 1;

/** A block number and (the first 16 hex digits of) its hash. */
export type Proof = [number, string];

export interface Cursor {
	/** The normalized query's hash (queryHash). */
	q: string;
	/** Range start and end (null: live) as resolved at the stream's open. */
	s: number;
	e: number | null;
	/** Position: after this item id (a string), or from this block on (a number). */
	p: string | number;
	/** Anchor and last proofs. */
	a: Proof;
	l: Proof;
}

const short = (h: string) => h.slice(0, 18);

export function encodeCursor(c: Cursor): string {
	const body = { v: CURSOR_VERSION, ...c, a: [c.a[0], short(c.a[1])], l: [c.l[0], short(c.l[1])] };
	return Buffer.from(JSON.stringify(body)).toString("base64url");
}

const HELP = "resume with the id of an event this stream sent (Last-Event-ID or cursor=), or omit it to start over";
const isProof = (p: unknown): p is Proof =>
	Array.isArray(p) &&
	p.length === 2 &&
	Number.isInteger(p[0]) &&
	(p[0] as number) >= -1 &&
	typeof p[1] === "string" &&
	/^0x[0-9a-f]{16}$/.test(p[1]);

/** The cursor of `text`, or a 400 INVALID_CURSOR (not one of ours) / CURSOR_MISMATCH (another query's). */
export function decodeCursor(text: string, query: string): Cursor {
	let c: Record<string, unknown> | null = null;
	try {
		if (text.length <= 1000 && /^[A-Za-z0-9_-]+$/.test(text)) c = JSON.parse(Buffer.from(text, "base64url").toString());
	} catch {
		c = null;
	}
	if (c === null || typeof c !== "object") throw badRequest("INVALID_CURSOR", `cursor: not a stream cursor; ${HELP}`);
	if (c.v !== CURSOR_VERSION)
		throw badRequest("INVALID_CURSOR", `cursor: made by another version of this service (${String(c.v)}); ${HELP}`);
	const position = c.p;
	const ok =
		typeof c.q === "string" &&
		Number.isInteger(c.s) &&
		(c.e === null || Number.isInteger(c.e)) &&
		((typeof position === "string" && /^[0-9a-f]{16}-[0-9a-f]{4}-[0-9a-f]{8}$/.test(position)) ||
			(Number.isInteger(position) && (position as number) >= 0)) &&
		isProof(c.a) &&
		isProof(c.l);
	if (!ok) throw badRequest("INVALID_CURSOR", `cursor: damaged (a field is missing or malformed); ${HELP}`);
	if (c.q !== query)
		throw badRequest(
			"CURSOR_MISMATCH",
			"cursor: it belongs to another query (another route, or other parameters): resume with the path and parameters it was issued for, or omit it to start over",
		);
	return c as unknown as Cursor;
}

/**
 * The hash of a stream's query: its path and parameters (names sorted, values lowercased: every
 * value is hex, a number or a keyword), without those that do not change its items.
 */
export function queryHash(path: string, query: Record<string, string>): string {
	const parts = Object.entries(query)
		.filter(([k]) => k !== "batchSize")
		.map(([k, v]) => `${k}=${v.toLowerCase()}`)
		.sort();
	return createHash("sha256")
		.update(`${path.toLowerCase()}?${parts.join("&")}`)
		.digest("base64url")
		.slice(0, 16);
}
