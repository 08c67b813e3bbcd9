import { amountOf, LIMBS } from "../store/format/amounts.js";
import { WALLETS } from "../store/format/records.js";
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
 * The holder's sums of the `erc20_balances` index (query/deltas.ts), or its rows of the holder
 * ranks (store/holdings/holder-ranks.ts) plus its changes after their block.
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
	// A page read through the ranks stops at `bound`: the last of the first `limit` + 1 ranked
	// tokens after the cursor.
	const bounded = since !== undefined && page !== undefined;
	if (since !== undefined) {
		// Its balances at the ranks' block, and what changed after (`sums` renamed: the total is read).
		const last = ctes.pop() as string;
		const base = `SELECT token, ${LIMBS.map((l) => `${l}::HUGEINT AS ${l}`).join(", ")}, last_block AS seen FROM {${WALLETS}} WHERE address = $v`;
		ctes.push(
			...(bounded
				? [
						// A page reads the first ranked tokens after the cursor, one more than the page, and
						// only the changes up to the last of them (every ranked token up to it is there):
						// a wallet's token count does not matter. Changed ones may net to zero and
						// drop out, so the page can come out short; the next starts after the bound.
						`base AS (${base} AND token > $after ORDER BY token LIMIT $limit)`,
						"bound AS (SELECT CASE WHEN count(*) < $limit THEN NULL ELSE max(token) END AS t FROM base)",
						last.replace(/^sums AS/, "changed AS"),
						"later AS (SELECT * FROM changed WHERE token > $after AND token <= coalesce((SELECT t FROM bound), token))",
					]
				: [last.replace(/^sums AS/, "later AS"), `base AS (${base})`]),
			`sums AS (SELECT token, ${LIMBS.map((l) => `sum(${l})::HUGEINT AS ${l}`).join(", ")}, max(seen) AS seen FROM (SELECT * FROM base UNION ALL BY NAME SELECT * FROM later) GROUP BY token)`,
		);
	}
	const nonZero = LIMBS.map((l) => `${l} <> 0`).join(" OR ");
	const select = `SELECT token, seen, ${LIMBS.map((l) => `CAST(${l} AS VARCHAR) AS ${l}`).join(", ")} FROM sums
		 WHERE (${nonZero})${page ? " AND token > $after ORDER BY token LIMIT $limit" : ""}`;
	const found = await db.query(
		// (The bound comes with every row, and alone when no token up to it is left.)
		bounded
			? `WITH ${ctes.join(", ")}, p AS (${select}) SELECT p.*, bound.t AS bound FROM p RIGHT JOIN bound ON true ORDER BY p.token`
			: `WITH ${ctes.join(", ")} ${select}`,
		page ? { ...q.params, after: page.after ?? "", limit: page.limit + 1 } : q.params,
		q.window,
		q.key,
	);
	const bound = found[0]?.bound == null ? undefined : String(found[0].bound);
	const rows = found.filter((r) => r.token != null);
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
	if (page && rows.length <= page.limit && bound !== undefined) return { balances, next: bound };
	const more = page !== undefined && rows.length > page.limit;
	return { balances, next: more ? String(kept.at(-1)?.token) : undefined };
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
