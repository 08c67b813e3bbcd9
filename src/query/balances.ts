import { amountOf, LIMBS } from "../store/amounts.js";
import { WALLETS } from "../store/holder-ranks.js";
import { deltaSums } from "./deltas.js";
import type { Snapshot } from "./store.js";

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
 * The holder's sums of the `erc20_balances` index (query/deltas.ts), or its rows of the holder
 * ranks (store/holder-ranks.ts) plus its changes after their block.
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
	const since = ranks && ranks.to <= n ? ranks.to : undefined;
	const q = await deltaSums(db, { kind: "erc20", by: "address", value: address, n, since });
	const ctes = [...q.ctes];
	if (since !== undefined) {
		// Its balances at the ranks' block, and what changed after (`sums` renamed: the total is read).
		const last = ctes.pop() as string;
		ctes.push(
			last.replace(/^sums AS/, "later AS"),
			`base AS (SELECT token, ${LIMBS.map((l) => `${l}::HUGEINT AS ${l}`).join(", ")}, last_block AS seen FROM {${WALLETS}} WHERE address = $v)`,
			`sums AS (SELECT token, ${LIMBS.map((l) => `sum(${l})::HUGEINT AS ${l}`).join(", ")}, max(seen) AS seen FROM (SELECT * FROM base UNION ALL BY NAME SELECT * FROM later) GROUP BY token)`,
		);
	}
	const nonZero = LIMBS.map((l) => `${l} <> 0`).join(" OR ");
	const rows = await db.query(
		`WITH ${ctes.join(", ")} SELECT token, seen, ${LIMBS.map((l) => `CAST(${l} AS VARCHAR) AS ${l}`).join(", ")} FROM sums
		 WHERE (${nonZero})${page ? " AND token > $after ORDER BY token LIMIT $limit" : ""}`,
		page ? { ...q.params, after: page.after ?? "", limit: page.limit + 1 } : q.params,
		q.window,
		q.key,
	);
	const kept = page ? rows.slice(0, page.limit) : rows;
	// Limbs that are not all zero can still add up to zero (+10^9 in d0, -1 in d1): dropped here,
	// so a page may hold fewer than `limit`; the next one starts after the last token looked at.
	const balances = kept
		.map((r) => ({
			token: String(r.token),
			raw: amountOf(LIMBS.map((l) => r[l] as string | null)),
			seenAt: Number(r.seen ?? 0),
		}))
		.filter((b) => b.raw !== 0n)
		.sort((a, b) => (a.token < b.token ? -1 : 1));
	const more = page !== undefined && rows.length > page.limit;
	return { balances, next: more ? String(kept.at(-1)?.token) : undefined };
}

/** An account's native balance as of a block. */
export interface NativeBalance {
	raw: bigint;
	/** The last block at or before the asked one that changed it (0: none did since genesis). */
	seenAt: number;
	/** Whether its genesis allocation is known (read when it first paid, store/token-metadata.ts). */
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
