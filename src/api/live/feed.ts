import type { FastifyInstance } from "fastify";
import { ApiError } from "../errors.js";
import { hashAt, sameHash } from "./block-hashes.js";
import { encodeCursor, type Proof } from "./cursor.js";
import { type FeedRequest, takePlan } from "./feed-plan.js";
import { type ListPage, listPage, type PageAsk } from "./list-pages.js";

/*
 * The live feed: a list query's items in chain order from its range start (or a cursor), then
 * live as the writer stores blocks, with reorgs told exactly. Streams (SSE, streams.ts) and
 * webhooks share it; docs/api-contract.md "Streams" is its contract.
 *
 * Pages come from the list route itself (list-pages.ts), bounded by the stored head minus
 * `confirmations`. A page is kept only if the chain's manifest did not change under it, or
 * changed once and still holds the same block at the page's bound (block hashes chain, so every
 * block below it is the same too); otherwise it is asked again. The feed remembers the hash of
 * each block it delivered items from (back to the final block) and of the block it scanned to;
 * when the highest of them is no longer stored, the highest still stored is the last common
 * block it tells in a `reorg` event, and it goes on after it.
 */

/** One event of a feed, in the order a consumer must apply them. */
export type FeedEvent =
	| {
			type: "item";
			/** Cursor that resumes right after this item. */
			id: string;
			block_number: number;
			/** The item as the JSON list route returns it (JSON.parse of `text`: integers past 2^53 rounded). */
			item: object;
			/** The item's JSON text exactly as the list route writes it: send this, not JSON.stringify(item). */
			text: string;
	  }
	| {
			type: "reorg";
			/** Cursor resuming after the reorg. */
			id: string;
			block_number: number;
			/** The last block still canonical; drop items above it. */
			block_hash: string;
	  }
	/**
	 * Heartbeat, also sent when the stored head moves: the stored head, and the last block whose
	 * items have all been sent (-1 before the first; behind the head by `confirmations` or more).
	 */
	| { type: "head"; block_number: number; block_hash: string; scanned_through: number }
	/** The query's block_number_end reached and delivered. */
	| { type: "end"; reason: "range_end" };

const blockOfId = (id: string) => Number.parseInt(id.slice(0, 16), 16);

/** Events from the range start (or after the cursor), then live, until `signal` aborts or the range end. */
export async function* openFeed(
	app: FastifyInstance,
	req: FeedRequest,
	signal: AbortSignal,
): AsyncGenerator<FeedEvent, void, undefined> {
	const plan = await takePlan(app, req);
	const { store, options } = app.live;
	const watcher = app.live.watcher(req.chain);
	// Blocks whose hashes prove what the client holds: those it got items from, the block scanned
	// to (`scanned`, dropped when the next scan passes it), and the anchor below them.
	const mem = new Map<number, string>();
	let scanned: number | null = null;
	// Position: after item `after` (in block `next`), or from block `next` on.
	let after: string | null = null;
	let next = plan.start;
	const c = plan.cursor;
	if (c) {
		if (typeof c.p === "string") [after, next] = [c.p, blockOfId(c.p)];
		else next = c.p;
		mem.set(c.a[0], c.a[1]);
		mem.set(c.l[0], c.l[1]);
	}
	let based = c !== null;
	const cursorOf = (last: Proof) =>
		encodeCursor({ q: plan.query, s: plan.start, e: plan.end, p: after ?? next, a: anchorOf(mem, last), l: last });
	let lastHead = "";
	let beatAt = 0;

	while (!signal.aborted) {
		const seen = watcher.generation();
		const snap = store.snapshot(req.chain);
		const gen = snap.manifest()?.generation ?? null;
		const head = snap.head();
		if (head !== null) {
			if (!based) {
				// The block before the range: the last common block when every item goes.
				const h = await hashAt(snap, plan.start - 1);
				if (h !== null) {
					mem.set(plan.start - 1, h);
					based = true;
				}
			}
			const headHash = (await hashAt(snap, head)) ?? "";
			// Sent after the pages of a pass (and between pages when a heartbeat falls due): a head
			// event tells how far the stream is.
			const due = () => `${head}:${headHash}` !== lastHead || Date.now() - beatAt >= options.heartbeatMs;
			const headEvent = (): FeedEvent => {
				[lastHead, beatAt] = [`${head}:${headHash}`, Date.now()];
				return { type: "head", block_number: head, block_hash: headHash, scanned_through: next - 1 };
			};

			// A reorg: the highest block remembered is no longer stored.
			const top = Math.max(...mem.keys());
			if (mem.size > 0 && !sameHash(await hashAt(snap, top), mem.get(top) ?? null)) {
				const common = await lastCommon(snap, mem, plan.start - 1);
				if (common === null) {
					await watcher.wait(seen, options.pollMs, signal);
					continue;
				}
				const [n, h] = common;
				for (const b of [...mem.keys()]) if (b > n) mem.delete(b);
				mem.set(n, h);
				if (scanned !== null && scanned > n) scanned = null;
				if (next > n + 1 || (after !== null && next > n)) [after, next] = [null, n + 1];
				yield { type: "reorg", id: cursorOf([n, h]), block_number: n, block_hash: h };
			}

			const bound = Math.min(plan.end ?? Number.POSITIVE_INFINITY, head - req.confirmations);
			let stale = false;
			while (next <= bound && !signal.aborted) {
				const page = await pageOf(app, plan.ask, [next, bound], after, options.pageItems);
				if (!(await unchanged(app, req.chain, snap, gen, bound))) {
					stale = true;
					break;
				}
				for (const it of page.items) {
					if (it.id === null) [after, next] = [null, it.block + 1];
					else [after, next] = [it.id, it.block];
					mem.set(it.block, it.hash);
					if (scanned === it.block) scanned = null;
					yield {
						type: "item",
						id: cursorOf([it.block, it.hash]),
						block_number: it.block,
						item: it.item,
						text: it.text,
					};
					if (signal.aborted) return;
				}
				if (!page.hasMore) {
					[after, next] = [null, bound + 1];
					const h = await hashAt(snap, bound);
					if (h !== null && !mem.has(bound)) {
						if (scanned !== null) mem.delete(scanned);
						mem.set(bound, h);
						scanned = bound;
					}
				} else if (Date.now() - beatAt >= options.heartbeatMs) yield headEvent();
			}
			if (stale) continue;
			if (due()) yield headEvent();
			if (plan.end !== null && next > plan.end) {
				yield { type: "end", reason: "range_end" };
				return;
			}
			// The block kept below the final one is the anchor now, no longer the scan's to drop.
			if (prune(mem, store.state(req.chain)?.final ?? null) === scanned) scanned = null;
		}
		await watcher.wait(seen, Math.max(1, options.heartbeatMs - (Date.now() - beatAt)), signal);
	}
}

/** A page of up to `limit` items, fewer when the route finds that many too large for one answer. */
async function pageOf(
	app: FastifyInstance,
	ask: PageAsk,
	range: [number, number],
	after: string | null,
	limit: number,
): Promise<ListPage> {
	for (let n = limit; ; n = Math.ceil(n / 2)) {
		try {
			return await listPage(app, ask, { range, after, limit: n });
		} catch (err) {
			if (!(err instanceof ApiError && err.code === "RESPONSE_TOO_LARGE" && n > 1)) throw err;
		}
	}
}

/** The lowest block remembered (at most `last`'s): what a cursor falls back to. */
function anchorOf(mem: Map<number, string>, last: Proof): Proof {
	let low: Proof = last;
	for (const [n, h] of mem) if (n < low[0]) low = [n, h];
	return low;
}

/** The highest remembered block still stored, with its hash; else the block before the range; null if that is not stored yet. */
async function lastCommon(
	snap: Parameters<typeof hashAt>[0],
	mem: Map<number, string>,
	before: number,
): Promise<[number, string] | null> {
	for (const n of [...mem.keys()].sort((a, b) => b - a)) {
		const h = await hashAt(snap, n);
		if (h !== null && sameHash(h, mem.get(n) ?? null)) return [n, h];
	}
	const h = await hashAt(snap, before);
	return h === null ? null : [before, h];
}

/**
 * Whether the page just asked (from whichever manifest the route read) holds what `snap` holds
 * up to `bound`: the same manifest still, or the next one with the same block at `bound`.
 */
async function unchanged(
	app: FastifyInstance,
	chain: string,
	snap: Parameters<typeof hashAt>[0],
	gen: number | null,
	bound: number,
): Promise<boolean> {
	const now = app.live.store.snapshot(chain);
	const g = now.manifest()?.generation ?? null;
	if (g === gen) return true;
	if (gen === null || g !== gen + 1) return false;
	return sameHash(await hashAt(snap, bound), await hashAt(now, bound));
}

/**
 * Forgets blocks below the highest one at or below `final` (the follower never reorgs them);
 * returns the one kept (null: none is final).
 */
function prune(mem: Map<number, string>, final: number | null): number | null {
	if (final === null) return null;
	const settled = [...mem.keys()].filter((n) => n <= final);
	if (settled.length === 0) return null;
	const keep = Math.max(...settled);
	for (const n of settled) if (n < keep) mem.delete(n);
	return keep;
}
