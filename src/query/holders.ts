import { listValue } from "@duckdb/node-api";
import { ADDRESS_LAYOUTS } from "../store/format/address-records.js";
import {
	amountOf,
	amountOfParts,
	amountSql,
	LIMBS,
	PARTS,
	partsOfAmount,
	somePositiveLimbSql,
} from "../store/format/amounts.js";
import { HEAD_RANKS, RANKS, type RankEntry } from "../store/format/records.js";
import type { HeadRanks } from "../store/holdings/head-ranks.js";
import { deltaSums } from "./deltas.js";
import { everyChunkHas } from "./every-chunk-has.js";
import { isQuiet } from "./store/key-filters.js";
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

/** The balance a cursor names (its parts most significant first). */
const cursorAmount = (c: HolderCursor): bigint => amountOfParts([...c.parts].reverse());
/** The cursor after a holder of balance `raw`. */
const cursorAt = (raw: bigint, address: string): HolderCursor => ({ parts: partsOfAmount(raw).reverse(), address });

/** SQL of "the ranked row's balance is positive": its most significant non-zero part is (m0 and m1 are never negative). */
function positivePartsSql(): string {
	const [top, ...rest] = ORDER;
	return `(${top} > 0 OR (${top} = 0 AND (${rest.map((p) => `${p} > 0`).join(" OR ")})))`;
}

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
 * DuckDB BIGNUMs and put in order by DuckDB (amounts.ts amountSql), or for a quiet token its
 * transfers summed in JS (quietHolders).
 */
export async function tokenHolders(
	db: Snapshot,
	token: string,
	page: { limit: number; after?: HolderCursor },
	at?: number,
	/** The most changes after head ranks a page adds to them (default: headRankedPage's; tests: 0, summing instead). */
	headTailMax?: number,
): Promise<{ holders: Holder[]; hasMore: boolean; next?: HolderCursor }> {
	const head = db.head();
	if (head === null) return { holders: [], hasMore: false };
	const n = Math.min(at ?? head, head);
	// A busy token's head ranks where they reach the asked block (in a folder a follower keeps:
	// store/holdings/head-ranks.ts): their rows at their own block, or those plus the few changes after.
	const recent = db.headRanks();
	const held =
		recent !== null && recent.to <= n && Object.hasOwn(recent.tokens, token) ? recent.tokens[token] : undefined;
	if (recent !== null && held !== undefined && head - recent.to <= HEAD_TAIL_BLOCKS) {
		if (recent.to === n) return rankedPage(db, HEAD_RANKS, token, page);
		const tail = await headTail(db, recent);
		const changes = n === head ? tail.changes : null;
		const max = headTailMax ?? headTailBound(held, changes !== null);
		// (The changes up to the head bound those up to `n`: past `max`, not even read.)
		if ((tail.counts.get(token) ?? 0) <= max) {
			const paged = await headRankedPage(db, recent, token, n, page, max, changes);
			if (paged) return paged;
		}
	}
	// The holder ranks (store/holdings/holder-ranks.ts). As of their own block (a folder no follower
	// keeps is ranked to its tip) the page is their rows as they are, whatever the token's size: on M
	// 1.9-2.7 ms for tokens of 8 to 9,091 holdings, where summing them took 2.6-14.7 (BENCHMARKS.md
	// "eighteenth figures").
	const ranks = db.ranks();
	if (ranks !== null && ranks.to === n) return rankedPage(db, RANKS, token, page);
	const ranked = ranks !== null && ranks.to <= n && (await db.ranked(token));
	if (!ranked) {
		const quiet = await quietHolders(db, token, n, head, page);
		if (quiet) return quiet;
	}
	// From the holder ranks where they cover a prefix of the blocks, for a token with many holdings: a
	// few thousand are summed faster than its ranked rows are read.
	const since = ranked ? ranks.to : undefined;
	const q = await deltaSums(db, { kind: "erc20", by: "token", value: token, n, since });
	const params: Params = { ...q.params, zero: ZERO_ADDRESS, limit: page.limit + 1 };
	// (On a summed balance `b`, amountSql.)
	let after = "true";
	if (page.after) {
		params.cb = cursorAmount(page.after).toString();
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
	return pageOf(
		rows.map((r) => ({ address: String(r.address), raw: BigInt(String(r.raw)), seenAt: Number(r.seen ?? 0) })),
		page.limit,
	);
}

/**
 * A page of `limit` holders from `ordered` (the page's holders in order, then any after it: one
 * more says there are more), with the cursor after its last.
 */
function pageOf(
	ordered: readonly Holder[],
	limit: number,
): { holders: Holder[]; hasMore: boolean; next?: HolderCursor } {
	const holders = ordered.slice(0, limit);
	const last = holders.at(-1);
	const hasMore = ordered.length > limit;
	return { holders, hasMore, next: hasMore && last ? cursorAt(last.raw, last.address) : undefined };
}

/**
 * tokenHolders as of the ranks' own block (`table`: the holder ranks, or the head ranks): the
 * token's ranked rows in their order (balance descending, then address), positive balances only,
 * their parts added up here. One read of the key-range part the token is in; no sums, no BIGNUM,
 * no order to compute.
 */
async function rankedPage(
	db: Snapshot,
	table: typeof RANKS | typeof HEAD_RANKS,
	token: string,
	page: { limit: number; after?: HolderCursor },
): Promise<{ holders: Holder[]; hasMore: boolean; next?: HolderCursor }> {
	const params: Params = { v: token, zero: ZERO_ADDRESS, limit: page.limit + 1 };
	const after = page.after ? afterPartsSql(page.after, params) : "true";
	const rows = await db.query(
		`SELECT address, last_block AS seen, ${PARTS.map((p) => `CAST(${p} AS VARCHAR) AS ${p}`).join(", ")} FROM {${table}}
		 WHERE token = $v AND address <> $zero AND ${positivePartsSql()} AND (${after}) ORDER BY rank LIMIT $limit`,
		params,
		undefined,
		token,
	);
	return pageOf(
		rows.map((r) => ({
			address: String(r.address),
			raw: amountOfParts(PARTS.map((p) => String(r[p]))),
			seenAt: Number(r.seen ?? 0),
		})),
		page.limit,
	);
}

/**
 * The most changed holdings a page of a token with `holdings` in head ranks adds to them: a third
 * of them when its changes were read for the whole manifest state (`read`: headTail), an eighth
 * when the page reads them itself, and at least HEAD_TAIL_MIN. Past that, summing every run costs
 * less: at M, with the changes read once, a page costs about 3.5 ms plus 0.009 a changed holding,
 * reading them itself 2.5 plus 0.025, summing tokens of 2,062 to 9,091 holdings 11-16 ms
 * (BENCHMARKS.md "nineteenth figures"); a token of millions of holdings costs seconds to sum.
 */
const headTailBound = (holdings: number, read: boolean): number => Math.max(HEAD_TAIL_MIN, holdings / (read ? 3 : 8));
const HEAD_TAIL_MIN = 256;
/**
 * Head ranks more than this many blocks below the head are not read (left behind while a follower
 * catches up, its background merges waiting): counting the changes after them would read that tail.
 */
const HEAD_TAIL_BLOCKS = 256;

/** A token's holding changed after head ranks: its address, last change, and limb sums as text. */
type Change = Record<string, unknown>;

/** The columns of a Change, over relation columns `address`, the limbs and `seen`. */
const CHANGE_COLUMNS = `address, seen, ${LIMBS.map((l) => `CAST(${l} AS VARCHAR) AS ${l}`).join(", ")}`;

/**
 * The holdings changed after head ranks `ranks` up to the head, in the index files, once per
 * manifest state for every token they hold: how many of each token's (`counts`), and the changes
 * themselves of the tokens whose pages read them (headTailBound) when every chunk after them has
 * its index file (`changes`; else null, and each page sums its token's from the transfers too:
 * deltaSums). A page at the head then reads only the ranked rows (BENCHMARKS.md "nineteenth
 * figures").
 */
function headTail(
	db: Snapshot,
	ranks: HeadRanks,
): Promise<{ counts: Map<string, number>; changes: Map<string, Change[]> | null }> {
	return db.memo(`head-ranks-tail ${ranks.gen}`, async () => {
		const head = db.head() ?? ranks.to;
		const window: [number, number] = [ranks.to + 1, head];
		const rows = await db.query(
			`SELECT token, count(DISTINCT address) AS n FROM {erc20_holders} WHERE first_block > $since GROUP BY token`,
			{ since: ranks.to },
			window,
		);
		const counts = new Map(rows.map((r) => [String(r.token), Number(r.n)]));
		const read = [...counts].filter(
			([t, n]) => ranks.tokens[t] !== undefined && n <= headTailBound(ranks.tokens[t], true),
		);
		const indexed = db.chunks().every((c) => c.to <= ranks.to || db.indexed("erc20_holders", c));
		if (!indexed) return { counts, changes: null };
		const changes = new Map<string, Change[]>();
		if (read.length > 0)
			for (const r of await db.query(
				`SELECT token, ${CHANGE_COLUMNS} FROM (SELECT token, address, max(last_block) AS seen, ${LIMBS.map((l) => `sum(${l})::HUGEINT AS ${l}`).join(", ")}
				 FROM {erc20_holders} WHERE first_block > $since AND list_contains($tokens, token) GROUP BY token, address)`,
				{ since: ranks.to, tokens: listValue(read.map(([t]) => t)) },
				window,
			)) {
				const of = changes.get(String(r.token));
				if (of) of.push(r);
				else changes.set(String(r.token), [r]);
			}
		return { counts, changes };
	});
}

/**
 * tokenHolders after the block of head ranks holding `token` (store/holdings/head-ranks.ts), as
 * of block `n`: the token's changes since (a few blocks' worth: they are rebuilt every few; at the
 * head from `tail`, else read here), then the ranked rows of the unchanged holdings that may be on
 * the page (the next page's worth after the cursor: unchanged, they keep their order) and those of
 * the changed holdings, added up here. The same sums and order in one statement (the tokenHolders
 * path for the holder ranks) cost 12 ms at M for a token of 9,091 holdings, most of it in planning
 * and running its dozen operators (BENCHMARKS.md "nineteenth figures"). Null past `max` changed
 * holdings (a busy token with few holdings there): the caller reads the holder ranks or sums
 * instead.
 */
async function headRankedPage(
	db: Snapshot,
	ranks: RankEntry,
	token: string,
	n: number,
	page: { limit: number; after?: HolderCursor },
	max: number,
	/** Every token's changes up to the head, read once per manifest state (headTail), if `n` is the head. */
	tail: Map<string, Change[]> | null,
): Promise<{ holders: Holder[]; hasMore: boolean; next?: HolderCursor } | null> {
	let changes = tail?.get(token) ?? (tail ? [] : null);
	if (!changes) {
		const q = await deltaSums(db, { kind: "erc20", by: "token", value: token, n, since: ranks.to });
		changes = await db.query(
			`WITH ${q.ctes.join(", ")} SELECT ${CHANGE_COLUMNS} FROM sums LIMIT ${max + 1}`,
			q.params,
			q.window,
			q.key,
		);
	}
	if (changes.length > max) return null;
	if (changes.length === 0) return rankedPage(db, HEAD_RANKS, token, page);
	const changed = listValue(changes.map((c) => String(c.address)));
	const cols = `address, last_block AS seen, ${PARTS.map((p) => `CAST(${p} AS VARCHAR) AS ${p}`).join(", ")}`;
	let rows: Record<string, unknown>[];
	if (!page.after) {
		// The first page's unchanged holdings rank within a page, the changed ones and the zero
		// address (positive balances rank first): a bound the row groups' statistics prune by, and
		// no order to compute (at M 3.5-3.8 ms, against 5.7-6.8 for the form below).
		rows = await db.query(
			`SELECT ${cols} FROM {${HEAD_RANKS}} WHERE token = $v AND (rank <= $top OR list_contains($changed, address))`,
			{ v: token, top: page.limit + 2 + changes.length, changed },
			undefined,
			token,
		);
	} else {
		const params: Params = { v: token, zero: ZERO_ADDRESS, limit: page.limit + 1, changed };
		rows = await db.query(
			`(SELECT ${cols} FROM {${HEAD_RANKS}} WHERE token = $v AND address <> $zero AND ${positivePartsSql()} AND (${afterPartsSql(page.after, params)})
			   AND NOT list_contains($changed, address) ORDER BY rank LIMIT $limit)
			 UNION ALL (SELECT ${cols} FROM {${HEAD_RANKS}} WHERE token = $v AND list_contains($changed, address))`,
			params,
			undefined,
			token,
		);
	}
	const held = new Map<string, Holder>();
	for (const r of rows)
		held.set(String(r.address), {
			address: String(r.address),
			raw: amountOfParts(PARTS.map((p) => String(r[p]))),
			seenAt: Number(r.seen ?? 0),
		});
	for (const c of changes) {
		const address = String(c.address);
		const was = held.get(address);
		held.set(address, {
			address,
			raw: (was?.raw ?? 0n) + amountOf(LIMBS.map((l) => c[l] as string | null)),
			seenAt: Math.max(was?.seenAt ?? 0, Number(c.seen ?? 0)),
		});
	}
	return pageOf(inOrder([...held.values()], page.after), page.limit);
}

/**
 * The positive holdings of `held` but the zero address's, after `cursor` if given, in the pages'
 * order (balance descending, then address).
 */
function inOrder(held: readonly Holder[], cursor?: HolderCursor): Holder[] {
	const c = cursor && { raw: cursorAmount(cursor), address: cursor.address };
	return held
		.filter((h) => h.raw > 0n && h.address !== ZERO_ADDRESS)
		.filter((h) => !c || h.raw < c.raw || (h.raw === c.raw && h.address > c.address))
		.sort((a, b) => (a.raw === b.raw ? (a.address < b.address ? -1 : 1) : a.raw > b.raw ? -1 : 1));
}

/** Where field `name` is in a `token_transfers` record (store/format/address-records.ts). */
function fieldAt(name: string): number {
	const i = ADDRESS_LAYOUTS.token_transfers.record.indexOf(name);
	if (i < 0) throw new Error(`no ${name} in a token_transfers record`);
	return i;
}
const [SENDER, RECIPIENT, VALUE, STANDARD] = ["sender", "recipient", "value", "token_standard"].map(fieldAt) as [
	number,
	number,
	number,
	number,
];

/**
 * tokenHolders of a quiet token, summed from its transfers in JS: one statement over its
 * `token_transfers` records (the files its key filters admit, none listing it as busy: at most
 * a row group's rows in each), instead of its sums in every `erc20_holders` run, whose statement
 * decodes a group of 16,384 rows in each and costs milliseconds to plan (BENCHMARKS.md "tenth
 * figures"). Null when the token is not quiet, or some chunk has no such records: tokenHolders
 * then sums the balance indexes.
 */
async function quietHolders(
	db: Snapshot,
	token: string,
	n: number,
	head: number,
	page: { limit: number; after?: HolderCursor },
): Promise<{ holders: Holder[]; hasMore: boolean; next?: HolderCursor } | null> {
	if (!everyChunkHas(db, "transfers", "token_transfers")) return null;
	if (!isQuiet(await db.keyRows("token_transfers", token, [0, n]))) return null;
	// (Neither the block nor the standard in SQL at the head: each condition reads a column more of
	// every group, 0.6-2.7 ms of a 3.4 ms statement at M; the few rows are told apart here.)
	const rows = await db.query(
		`SELECT block_number, record FROM {token_transfers} WHERE address = $v${n < head ? " AND block_number <= $n" : ""}`,
		n < head ? { v: token, n } : { v: token },
		[0, n],
		token,
	);
	// As the balance indexes count them (store/format/deltas.ts movesSql): the recipient +value, the sender -value.
	const held = new Map<string, Holder>();
	const move = (address: unknown, value: bigint, block: number) => {
		if (typeof address !== "string") return;
		const was = held.get(address);
		held.set(address, { address, raw: (was?.raw ?? 0n) + value, seenAt: Math.max(was?.seenAt ?? 0, block) });
	};
	for (const r of rows) {
		const f = JSON.parse(String(r.record)) as unknown[];
		const value = f[VALUE];
		if (f[STANDARD] !== "erc20" || value == null) continue;
		const block = Number(r.block_number);
		move(f[RECIPIENT], BigInt(String(value)), block);
		move(f[SENDER], -BigInt(String(value)), block);
	}
	return pageOf(inOrder([...held.values()], page.after), page.limit);
}
