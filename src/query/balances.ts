import { amountOf, LIMBS } from "../store/format/amounts.js";
import { WALLET_RECORDS } from "../store/format/records.js";
import { deltaSums } from "./deltas.js";
import type { Snapshot } from "./store/store.js";

/** A holder's balance of one ERC-20 token, as of a block. */
export interface TokenBalance {
	token: string;
	raw: bigint;
	/** The last block at or before the asked one whose transfers changed it. */
	seenAt: number;
}

/**
 * Every ERC-20 balance of `address` as of block `at` (default: the head), zero balances left out,
 * by token address.
 */
export async function tokenBalances(db: Snapshot, address: string, at?: number): Promise<TokenBalance[]> {
	return (await balancesOf(db, address, at)).balances;
}

/** One page of tokenBalances: the first `limit` tokens after `after`, and the next page's `after`. */
export function tokenBalancesPage(
	db: Snapshot,
	address: string,
	at: number | undefined,
	page: { limit: number; after?: string },
): Promise<{ balances: TokenBalance[]; next?: string }> {
	return balancesOf(db, address, at, page);
}

/**
 * The holder's sums of the `erc20_balances` index (query/deltas.ts), or its record of the holder
 * ranks (store/holdings/holder-ranks.ts) plus its changes after their block, added up here.
 */
async function balancesOf(
	db: Snapshot,
	address: string,
	at?: number,
	page?: { limit: number; after?: string },
): Promise<{ balances: TokenBalance[]; next?: string }> {
	const head = db.head();
	if (head === null) return { balances: [] };
	const n = Math.min(at ?? head, head);
	const ranks = db.ranks();
	if (ranks && ranks.to <= n && ranks.walletRecordParts !== undefined) {
		// Its record at the ranks' block (one row of two columns), then its changes after it: a
		// wallet that changed nothing since reads no index file at all (its key filters rule them
		// out). The whole list reads both side by side. A page reads only the changes up to the
		// first `limit` + 1 ranked tokens after the cursor (every ranked token up to there is
		// known): a heavy wallet's thousands of changed tokens are not summed for one page.
		const record = db
			.query(`SELECT record FROM {${WALLET_RECORDS}} WHERE address = $v`, { v: address }, undefined, address)
			.then((rows) => (rows[0]?.record == null ? [] : (JSON.parse(String(rows[0].record)) as string[][])));
		if (!page) {
			const [ranked, later] = await Promise.all([record, changesOf(db, address, n, ranks.to)]);
			return { balances: added(ranked, later) };
		}
		const after = page.after ?? "";
		const ranked = await record;
		const first = ranked.findIndex((h) => String(h[0]) > after);
		const window = first < 0 ? [] : ranked.slice(first, first + page.limit + 1);
		const bound = window.length > page.limit ? window.at(-1)?.[0] : undefined;
		const later = await changesOf(db, address, n, ranks.to, { after, bound });
		const rest = added(window, later);
		const balances = rest.slice(0, page.limit);
		// Changed ones may net to zero and drop out, so the page can come out short; the next then
		// starts after the bound.
		return { balances, next: rest.length > page.limit ? balances.at(-1)?.token : bound };
	}
	const q = await deltaSums(db, { kind: "erc20", by: "address", value: address, n });
	const nonZero = LIMBS.map((l) => `${l} <> 0`).join(" OR ");
	const found = await db.query(
		`WITH ${q.ctes.join(", ")} SELECT token, seen, ${LIMBS.map((l) => `CAST(${l} AS VARCHAR) AS ${l}`).join(", ")} FROM sums
		 WHERE (${nonZero})${page ? " AND token > $after ORDER BY token LIMIT $limit" : ""}`,
		page ? { ...q.params, after: page.after ?? "", limit: page.limit + 1 } : q.params,
		q.window,
		q.key,
	);
	const rows = page ? found.slice(0, page.limit) : found;
	// Limbs that are not all zero can still add up to zero (+10^9 in d0, -1 in d1): dropped here,
	// so a page may hold fewer than `limit`; the next one starts after the last token looked at.
	const balances = rows
		.map((r) => ({
			token: String(r.token),
			raw: amountOf(LIMBS.map((l) => r[l] as string | null)),
			seenAt: Number(r.seen ?? 0),
		}))
		.filter((b) => b.raw !== 0n)
		.sort((a, b) => (a.token < b.token ? -1 : 1));
	const more = page !== undefined && found.length > page.limit;
	return { balances, next: more ? String(rows.at(-1)?.token) : undefined };
}

/**
 * The holder's ERC-20 changes after block `since` up to `n`, summed per token (limbs as text);
 * with `range`, of the tokens after `range.after` up to `range.bound` only.
 */
async function changesOf(
	db: Snapshot,
	address: string,
	n: number,
	since: number,
	range?: { after: string; bound?: string },
) {
	const q = await deltaSums(db, { kind: "erc20", by: "address", value: address, n, since });
	const params = {
		...q.params,
		...(range ? { after: range.after } : {}),
		...(range?.bound ? { bound: range.bound } : {}),
	};
	const where = range ? `WHERE token > $after${range.bound ? " AND token <= $bound" : ""}` : "";
	return db.query(
		`WITH ${q.ctes.join(", ")} SELECT token, seen, ${LIMBS.map((l) => `CAST(${l} AS VARCHAR) AS ${l}`).join(", ")} FROM sums ${where}`,
		params,
		q.window,
		q.key,
	);
}

/**
 * The non-zero balances of a wallet record's holdings (token, balance, last block: holder-ranks.ts)
 * plus its changes since (changesOf's rows), by token.
 */
function added(ranked: readonly string[][], later: readonly Record<string, unknown>[]): TokenBalance[] {
	const total = new Map<string, TokenBalance>();
	const add = (token: string, raw: bigint, seenAt: number) => {
		const was = total.get(token);
		total.set(token, { token, raw: (was?.raw ?? 0n) + raw, seenAt: Math.max(was?.seenAt ?? 0, seenAt) });
	};
	for (const [token, balance, last] of ranked) add(String(token), BigInt(String(balance)), Number(last));
	for (const r of later) add(String(r.token), amountOf(LIMBS.map((l) => r[l] as string | null)), Number(r.seen ?? 0));
	return [...total.values()].filter((b) => b.raw !== 0n).sort((a, b) => (a.token < b.token ? -1 : 1));
}

/** An account's native balance as of a block. */
export interface NativeBalance {
	raw: bigint;
	/** The last block at or before the asked one that changed it (0: none did since genesis). */
	seenAt: number;
	/** Whether its genesis allocation is known (read when it first paid, store/holdings/token-metadata.ts). */
	opening: bigint | null;
}

/**
 * The native (ETH) balance of `address` as of block `n`: its genesis allocation plus the sums of
 * the `native_balances` index (query/deltas.ts).
 */
export async function nativeBalance(db: Snapshot, address: string, n: number): Promise<NativeBalance> {
	const q = await deltaSums(db, { kind: "native", by: "address", value: address, n });
	const [moved] = await db.query(
		`WITH ${q.ctes.join(", ")} SELECT max(seen) AS seen, ${LIMBS.map((l) => `CAST(sum(${l}) AS VARCHAR) AS ${l}`).join(", ")} FROM sums`,
		q.params,
		q.window,
		q.key,
	);
	const [open] = await db.query("SELECT balance FROM {opening_balances} WHERE address = $a", { a: address });
	const opening = open?.balance == null ? null : BigInt(String(open.balance));
	return {
		raw: (opening ?? 0n) + amountOf(LIMBS.map((l) => (moved?.[l] as string | null) ?? null)),
		seenAt: Number(moved?.seen ?? 0),
		opening,
	};
}
