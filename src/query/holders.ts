import { amountOfParts, amountSql, LIMBS, PARTS, partsOfAmount, somePositiveLimbSql } from "../store/format/amounts.js";
import { RANKS } from "../store/format/records.js";
import { deltaSums } from "./deltas.js";
import type { Params, Snapshot } from "./store/store.js";

export const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

export interface Holder {
	address: string;
	raw: bigint;
	/** The last block at or before the asked one whose transfers changed the balance. */
	seenAt: number;
}

/** Where a page of holders starts: after this holder in the order of tokenHolders. */
export interface HolderCursor {
	parts: string[];
	address: string;
}

/** Most significant part first (amounts.ts normalizedPartsSql). */
const ORDER = [...PARTS].reverse();

/**
 * SQL of "the ranked row comes after cursor `c`" in (balance descending, address ascending)
 * order, on the ranks file's normalized parts.
 */
function afterPartsSql(c: HolderCursor, params: Params): string {
	for (let i = 0; i < ORDER.length; i++) params[`c${i}`] = c.parts[i] ?? "0";
	params.ca = c.address;
	const equal = (upTo: number) => ORDER.slice(0, upTo).map((e, j) => `${e} = $c${j}::HUGEINT`);
	const terms = ORDER.map((col, i) => `(${[...equal(i), `${col} < $c${i}::HUGEINT`].join(" AND ")})`);
	terms.push(`(${equal(ORDER.length).join(" AND ")} AND address > $ca)`);
	return terms.join(" OR ");
}

/**
 * One page of the holders of an ERC-20 token as of block `at` (default: the head), by balance,
 * largest first (then by address), positive balances only (the zero address holds minus the
 * supply; a token whose events break its own books can leave others below zero too); exact, the
 * order included: the token's sums of the `erc20_holders` index (query/deltas.ts) added up as
 * DuckDB BIGNUMs and put in order by DuckDB (amounts.ts amountSql).
 */
export async function tokenHolders(
	db: Snapshot,
	token: string,
	page: { limit: number; after?: HolderCursor },
	at?: number,
): Promise<{ holders: Holder[]; hasMore: boolean; next?: HolderCursor }> {
	const head = db.head();
	if (head === null) return { holders: [], hasMore: false };
	const n = Math.min(at ?? head, head);
	// From the holder ranks where they cover a prefix of the blocks (store/holdings/holder-ranks.ts), for
	// a token with many holdings: a few thousand are summed faster than its ranked rows are read.
	const ranks = db.ranks();
	const since = ranks && ranks.to <= n && (await db.ranked(token)) ? ranks.to : undefined;
	const q = await deltaSums(db, { kind: "erc20", by: "token", value: token, n, since });
	const params: Params = { ...q.params, zero: ZERO_ADDRESS, limit: page.limit + 1 };
	// (On a summed balance `b`, amountSql.)
	let after = "true";
	if (page.after) {
		params.cb = amountOfParts([...page.after.parts].reverse()).toString();
		params.ca = page.after.address;
		after = "(b < $cb::BIGNUM OR (b = $cb::BIGNUM AND address > $ca))";
	}
	const ctes = [...q.ctes];
	if (since !== undefined) {
		// The holdings unchanged since the ranks keep their order there: the next ones after the
		// cursor, as many as a page plus the changed holdings (which may all sort before them),
		// are the only unchanged ones that can be on the page. The changed ones are added up with
		// their ranked balances. (`sums` is renamed: the page reads the total.)
		const limbs = LIMBS.join(", ");
		const rankedAfter = page.after ? afterPartsSql(page.after, params) : "true";
		const last = ctes.pop() as string;
		ctes.push(
			last.replace(/^sums AS/, "later AS"),
			`r AS (SELECT address, ${LIMBS.map((l) => `${l}::HUGEINT AS ${l}`).join(", ")}, last_block AS seen, ${PARTS.join(", ")}, rank FROM {${RANKS}} WHERE token = $v)`,
			`base AS ((SELECT address, ${limbs}, seen FROM r WHERE ${rankedAfter} ORDER BY rank LIMIT $limit + (SELECT count(*) FROM later))
			  UNION (SELECT address, ${limbs}, seen FROM r WHERE address IN (SELECT address FROM later)))`,
			`sums AS (SELECT address, ${LIMBS.map((l) => `sum(${l})::HUGEINT AS ${l}`).join(", ")}, max(seen) AS seen FROM (SELECT * FROM base UNION ALL BY NAME SELECT * FROM later) GROUP BY address)`,
		);
	}
	const rows = await db.query(
		`WITH ${ctes.join(", ")}, t AS (SELECT address, seen, ${amountSql()} AS b FROM sums WHERE ${somePositiveLimbSql()})
		 SELECT address, seen, CAST(b AS VARCHAR) AS raw FROM t
		 WHERE address <> $zero AND b > 0 AND (${after})
		 ORDER BY b DESC, address ASC LIMIT $limit`,
		params,
		q.window,
		q.key,
	);
	const kept = rows.slice(0, page.limit);
	const holders = kept.map((r) => ({
		address: String(r.address),
		raw: BigInt(String(r.raw)),
		seenAt: Number(r.seen ?? 0),
	}));
	const last = kept.at(-1);
	const hasMore = rows.length > page.limit;
	return {
		holders,
		hasMore,
		next:
			hasMore && last
				? { parts: partsOfAmount(BigInt(String(last.raw))).reverse(), address: String(last.address) }
				: undefined,
	};
}
