import { expect } from "vitest";
import { type Holder, type HolderCursor, tokenHolders } from "../../src/query/holders.js";
import type { Snapshot } from "../../src/query/store/store.js";

/**
 * Every holder of `token` as of `at` (default: the head), paged `limit` at a time with the
 * returned cursor, each page at most `limit` long (`headTailMax`: tokenHolders's).
 */
export async function holderPages(
	db: Snapshot,
	token: string,
	limit: number,
	at?: number,
	headTailMax?: number,
): Promise<Holder[]> {
	const out: Holder[] = [];
	let after: HolderCursor | undefined;
	for (let i = 0; i < 100; i++) {
		const page = await tokenHolders(db, token, { limit, after }, at, headTailMax);
		expect(page.holders.length).toBeLessThanOrEqual(limit);
		out.push(...page.holders);
		if (!page.hasMore) return out;
		after = page.next;
	}
	throw new Error("more than 100 pages");
}
