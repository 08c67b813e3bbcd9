import { amountOf, LIMBS } from "../store/amounts.js";
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
 * by token address: the holder's sums of the `erc20_balances` index (query/deltas.ts).
 */
export async function tokenBalances(db: Snapshot, address: string, at?: number): Promise<TokenBalance[]> {
	const head = db.head();
	if (head === null) return [];
	const q = await deltaSums(db, { kind: "erc20", by: "address", value: address, n: Math.min(at ?? head, head) });
	const rows = await db.query(
		`WITH ${q.ctes.join(", ")} SELECT token, seen, ${LIMBS.map((l) => `CAST(${l} AS VARCHAR) AS ${l}`).join(", ")} FROM sums`,
		q.params,
		q.window,
		q.key,
	);
	return rows
		.map((r) => ({
			token: String(r.token),
			raw: amountOf(LIMBS.map((l) => r[l] as string | null)),
			seenAt: Number(r.seen ?? 0),
		}))
		.filter((b) => b.raw !== 0n)
		.sort((a, b) => (a.token < b.token ? -1 : 1));
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
