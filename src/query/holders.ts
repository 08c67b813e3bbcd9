import { amountOfParts, LIMBS, normalizedPartsSql, PARTS, signedLimbSumsSql } from "../store/amounts.js";
import { inRanges, lacking } from "./balances.js";
import type { Params, Snapshot } from "./store.js";

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

/** The most holders a past block may find mid-change (see tokenHolders) before it is refused. */
export const MAX_STRADDLING = 5_000;

/**
 * One page of the holders of an ERC-20 token as of block `at` (default: the head), by balance,
 * largest first (then by address), zero balances and the zero address (minus the supply) left
 * out; exact, the order included.
 *
 * From the `erc20_holders` index (indexes.ts): per file, each holder's net change, summed over
 * the files and put in order by DuckDB with the carries done (amounts.ts). For a past block, the
 * holders whose changes in the one file holding that block lie on both sides of it are summed
 * from the token's transfers in that file's blocks up to `at` instead (as balances.ts does for
 * one wallet); and the chunks not settled yet, which get the index later, from their transfers.
 */
export async function tokenHolders(
	db: Snapshot,
	token: string,
	page: { limit: number; after?: HolderCursor },
	at?: number,
): Promise<{ holders: Holder[]; hasMore: boolean; next?: HolderCursor } | { tooMany: number }> {
	const head = db.head();
	if (head === null) return { holders: [], hasMore: false };
	const n = Math.min(at ?? head, head);
	const window: [number, number] = [0, n];
	const params: Params = { token, n, zero: ZERO_ADDRESS, limit: page.limit + 1 };
	const straddling =
		n < head
			? await db.query(
					"SELECT address, first_block FROM {erc20_holders} WHERE token = $token AND first_block <= $n AND last_block > $n",
					{ token, n },
					window,
					token,
				)
			: [];
	if (straddling.length > MAX_STRADDLING) return { tooMany: straddling.length };
	const sums = LIMBS.map((l) => `sum(${l}) FILTER (WHERE last_block <= $n)::HUGEINT AS ${l}`).join(", ");
	const ctes = [
		`s AS (SELECT address, ${sums}, max(last_block) FILTER (WHERE last_block <= $n) AS seen FROM {erc20_holders} WHERE token = $token AND first_block <= $n GROUP BY address)`,
	];
	const parts = ["SELECT * FROM s"];
	const side = (holder: string, sign: number, blocks: string) =>
		`SELECT ${holder} AS address, block_number, ${sign} AS sign, value FROM {transfers} WHERE contract = $token AND token_standard = 'erc20' AND value IS NOT NULL AND (${blocks}) AND ${holder} IS NOT NULL`;
	const sides = (blocks: string) => `(${side("recipient", 1, blocks)} UNION ALL ${side("sender", -1, blocks)})`;
	// The chunks no index file covers yet (not settled: merges.ts derives it later).
	const tail = lacking(db, "erc20_holders", n);
	if (tail.length > 0) {
		ctes.push(
			`q AS (SELECT x.address, ${signedLimbSumsSql("x.sign", "x.value", "HUGEINT")}, max(x.block_number) AS seen FROM ${sides(inRanges(tail, params))} x GROUP BY x.address)`,
		);
		parts.push("SELECT * FROM q");
	}
	if (straddling.length > 0) {
		const lo = Math.min(...straddling.map((r) => Number(r.first_block)));
		params.lo = lo;
		const values = straddling.map((r, i) => {
			params[`a${i}`] = String(r.address);
			params[`b${i}`] = Number(r.first_block);
			return `($a${i}, $b${i}::UBIGINT)`;
		});
		ctes.push(
			`st(address, since) AS (VALUES ${values.join(", ")})`,
			`p AS (SELECT x.address, ${signedLimbSumsSql("x.sign", "x.value", "HUGEINT")}, max(x.block_number) AS seen FROM ${sides("block_number BETWEEN $lo AND $n")} x JOIN st ON x.address = st.address AND x.block_number >= st.since GROUP BY x.address)`,
		);
		parts.push("SELECT * FROM p");
	}
	const all =
		parts.length === 1
			? "SELECT * FROM s"
			: `SELECT address, ${LIMBS.map((l) => `sum(${l})::HUGEINT AS ${l}`).join(", ")}, max(seen) AS seen FROM (${parts.join(" UNION ALL ")}) GROUP BY address`;
	ctes.push(`t AS (SELECT address, seen, ${normalizedPartsSql()} FROM (${all}))`);
	// Most significant part first (amounts.ts normalizedPartsSql).
	const order = [...PARTS].reverse();
	let after = "true";
	if (page.after) {
		// Rows after the cursor in (balance descending, address ascending) order.
		const c = page.after;
		for (let i = 0; i < order.length; i++) params[`c${i}`] = c.parts[i] ?? "0";
		params.ca = c.address;
		const terms = order.map((col, i) => {
			const equal = order.slice(0, i).map((e, j) => `${e} = $c${j}::HUGEINT`);
			return `(${[...equal, `${col} < $c${i}::HUGEINT`].join(" AND ")})`;
		});
		terms.push(`(${order.map((e, j) => `${e} = $c${j}::HUGEINT`).join(" AND ")} AND address > $ca)`);
		after = terms.join(" OR ");
	}
	const rows = await db.query(
		`WITH ${ctes.join(", ")}
		 SELECT address, seen, ${order.map((o) => `CAST(${o} AS VARCHAR) AS text_${o}`).join(", ")} FROM t
		 WHERE address <> $zero AND NOT (${order.map((o) => `${o} = 0`).join(" AND ")}) AND (${after})
		 ORDER BY ${order.map((o) => `${o} DESC`).join(", ")}, address ASC LIMIT $limit`,
		params,
		window,
		token,
	);
	const kept = rows.slice(0, page.limit);
	const holders = kept.map((r) => ({
		address: String(r.address),
		// (Text under other names: ORDER BY would take an output column named m2 for t's.)
		raw: amountOfParts(PARTS.map((k) => r[`text_${k}`] as string)),
		seenAt: Number(r.seen ?? 0),
	}));
	const last = kept.at(-1);
	const hasMore = rows.length > page.limit;
	return {
		holders,
		hasMore,
		next:
			hasMore && last
				? { parts: order.map((o) => String(last[`text_${o}`])), address: String(last.address) }
				: undefined,
	};
}
