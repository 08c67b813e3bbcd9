import { ADDRESS_LAYOUTS, recordRelationSql } from "../store/format/address-records.js";
import { LIMBS } from "../store/format/amounts.js";
import { HOLDING_KEYS, type HoldingKind, movesSql, nativeMovesSql, signedLimbSumsSql } from "../store/format/deltas.js";
import { INDEXES, type IndexDef, type IndexName } from "../store/format/indexes.js";
import { everyChunkHas } from "./every-chunk-has.js";
import type { Params, Snapshot } from "./store/store.js";

/*
 * Balances as of a block, summed from the balance indexes (store/format/deltas.ts): one holder's
 * holdings, or one token's holders. Shared by the ERC-20 routes (balances.ts, holders.ts) and
 * the NFT routes (nfts.ts).
 *
 * Per index file (a chunk's, or a merged run's) a holding's net change. Files are whole block
 * ranges in chain order, so for a past block `n` every file's change counts whole where its last
 * change is at or before `n`; the holdings whose changes in the one file holding `n` lie on both
 * sides of it ("straddling") are summed from their transfers instead, from that change's first
 * block up to `n`. The chunks with no index file yet (merges.ts derives them in the background,
 * moments after a head block) are summed from their transfers too. At the head nothing
 * straddles: one read of the index files whose key filter admits the holder or token, plus the
 * newest chunks' transfers where their files are not derived yet.
 */

/** The most holdings a past block may find mid-change before a query is refused. */
export const MAX_STRADDLING = 5_000;

/** More than MAX_STRADDLING holdings to sum from transfers: the API answers 503 TOO_MANY_CHANGES. */
export class TooManyChangesError extends Error {
	readonly code = "TOO_MANY_CHANGES";

	constructor(
		readonly count: number,
		n: number,
		max = MAX_STRADDLING,
	) {
		super(
			`${count} balances changed on both sides of block ${n} within one merged file (at most ${max} are summed from transfers); ask for the head, or a block nearer to it`,
		);
		this.name = "TooManyChangesError";
	}
}

const INDEX: Record<HoldingKind, Partial<Record<"address" | "token", IndexName>>> = {
	erc20: { address: "erc20_balances", token: "erc20_holders" },
	nft: { address: "nft_balances", token: "nft_holders" },
	// (No list of an account's peers by native balance: by holder only.)
	native: { address: "native_balances" },
};

export interface DeltaQuery {
	kind: HoldingKind;
	/** Whose holdings: one holder's (`address`) or one token's holders (`token`). */
	by: "address" | "token";
	value: string;
	/** As of this block (at most the head). */
	n: number;
	/**
	 * Only the changes after this block (holder ranks, store/holdings/holder-ranks.ts, hold the balances up
	 * to it; no index file may span it): the files and the tail after it are read, no others.
	 */
	since?: number;
}

/** The columns a holding of `q` is grouped by: what is not fixed by the query. */
export const groupOf = (q: Pick<DeltaQuery, "kind" | "by">): string[] =>
	["address", ...HOLDING_KEYS[q.kind]].filter((c) => c !== q.by);

/**
 * SQL CTEs (as a list, to go after WITH) whose last, `sums`, has one row per holding of `q` with
 * any change up to block `n`: its group columns (groupOf), the limb sums d0..d8 (HUGEINT; zero
 * balances included) and `seen`, the last block at or before `n` that changed it. With the params
 * they bind, the block window and the key to read with. Throws TooManyChangesError past
 * `maxStraddling` (MAX_STRADDLING; lower in tests).
 */
export async function deltaSums(
	db: Snapshot,
	q: DeltaQuery,
	maxStraddling = MAX_STRADDLING,
): Promise<{ ctes: string[]; params: Params; window: [number, number]; key: string }> {
	const index = INDEX[q.kind][q.by];
	if (!index) throw new Error(`no ${q.kind} index by ${q.by}`);
	const group = groupOf(q);
	const cols = group.join(", ");
	const since = q.since ?? -1;
	const window: [number, number] = [since + 1, q.n];
	const params: Params = { v: q.value, n: q.n, since };
	const head = db.head() ?? q.n;
	// The holdings straddling `n`: how many, and the first block to sum their moves from (the
	// statement below lists them itself, so its text stays the same and its plan cached).
	const straddles = `${q.by} = $v AND first_block > $since AND first_block <= $n AND last_block > $n`;
	const [straddling] =
		q.n < head
			? await db.query(
					`SELECT count(*) AS count, min(first_block) AS lo FROM {${index}} WHERE ${straddles}`,
					{ v: q.value, n: q.n, since },
					window,
					q.value,
				)
			: [];
	const count = Number(straddling?.count ?? 0);
	if (count > maxStraddling) throw new TooManyChangesError(count, q.n, maxStraddling);

	// (At the head every change counts: no filter to plan and run per sum.)
	const counted = q.n < head ? " FILTER (WHERE last_block <= $n)" : "";
	const sums = LIMBS.map((l) => `sum(${l})${counted}::HUGEINT AS ${l}`).join(", ");
	const ctes = [
		`s AS (SELECT ${cols}, ${sums}, max(last_block)${counted} AS seen FROM {${index}} WHERE ${q.by} = $v AND first_block > $since AND first_block <= $n GROUP BY ${cols})`,
	];
	const parts = ["SELECT * FROM s"];
	// The moves of `q`'s holdings in the blocks `blocks` (SQL) within `[from, to]`, reading only
	// the files of those blocks; a holder's own come from the address-sorted index where every
	// chunk has it.
	const moves = (blocks: string, [from, to]: [number, number]) => {
		const rel = (d: string) => `{${d}@${from}-${to}}`;
		if (q.kind === "native")
			return `(SELECT * FROM (${nativeMovesSql((d) => `(SELECT * FROM ${rel(d)} WHERE (${d === "blocks" ? blocks.replaceAll("block_number", "number") : blocks}))`)}) WHERE address = $v)`;
		if (q.by === "token")
			return `(${movesSql(`(SELECT * FROM ${rel("transfers")} WHERE contract = $v AND (${blocks}))`, q.kind)})`;
		const every = (index: IndexName) => everyChunkHas(db, "transfers", index);
		const records = (["wallet_transfers", "transfer_records_by_address"] as const).find(every);
		const src = records
			? `(SELECT * EXCLUDE (address, side, record) FROM ${recordRelationSql(ADDRESS_LAYOUTS[records], rel(records))} WHERE address = $v AND (${blocks}))`
			: every("transfers_by_address")
				? `(SELECT * EXCLUDE (address) FROM ${rel("transfers_by_address")} WHERE address = $v AND (${blocks}))`
				: `(SELECT * FROM ${rel("transfers")} WHERE (sender = $v OR recipient = $v) AND (${blocks}))`;
		return `(SELECT * FROM (${movesSql(src, q.kind)}) WHERE address = $v)`;
	};
	const summed = (from: string, join = "") =>
		`SELECT ${group.map((c) => `x.${c}`).join(", ")}, ${signedLimbSumsSql("x.sign", "x.value", "HUGEINT")}, max(x.block_number) AS seen FROM ${from} x ${join} GROUP BY ${group.map((c) => `x.${c}`).join(", ")}`;

	const tail = lacking(db, index, q.n).filter(([, to]) => to > since);
	if (tail.length > 0) {
		ctes.push(`q AS (${summed(moves(inRanges(tail, params), [(tail[0] as [number, number])[0], q.n]))})`);
		parts.push("SELECT * FROM q");
	}
	if (count > 0) {
		const lo = Number(straddling?.lo);
		params.lo = lo;
		ctes.push(
			`st AS (SELECT ${cols}, first_block AS since FROM {${index}} WHERE ${straddles})`,
			`p AS (${summed(moves("block_number BETWEEN $lo AND $n", [lo, q.n]), `JOIN st ON ${group.map((c) => `x.${c} = st.${c}`).join(" AND ")} AND x.block_number >= st.since`)})`,
		);
		parts.push("SELECT * FROM p");
	}
	ctes.push(
		parts.length === 1
			? "sums AS (SELECT * FROM s)"
			: `sums AS (SELECT ${cols}, ${LIMBS.map((l) => `sum(${l})::HUGEINT AS ${l}`).join(", ")}, max(seen) AS seen FROM (${parts.join(" UNION ALL BY NAME ")}) GROUP BY ${cols})`,
	);
	return { ctes, params, window, key: q.value };
}

/**
 * The block ranges up to `n` of the chunks that have transfers but no file of `index` yet (not
 * derived yet: the deferred indexes come in the background, merges.ts), adjacent ones
 * joined: what a balance sums from the transfers themselves.
 */
export function lacking(db: Snapshot, index: IndexName, n: number): [number, number][] {
	const out: [number, number][] = [];
	const def: IndexDef = INDEXES[index];
	for (const c of db.chunks()) {
		if (c.from > n || !c.datasets.includes(def.source) || db.indexed(index, c)) continue;
		const last = out.at(-1);
		if (last && last[1] + 1 === c.from) last[1] = Math.min(c.to, n);
		else out.push([c.from, Math.min(c.to, n)]);
	}
	return out;
}

/** SQL of `block_number` within any of `ranges` (bound as $r<i>a, $r<i>b in `params`). */
export function inRanges(ranges: readonly [number, number][], params: Params): string {
	return ranges
		.map(([a, b], i) => {
			params[`r${i}a`] = a;
			params[`r${i}b`] = b;
			return `block_number BETWEEN $r${i}a AND $r${i}b`;
		})
		.join(" OR ");
}
