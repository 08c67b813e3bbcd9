import { amountOf, LIMBS, limbSumsSql, signedLimbSumsSql } from "../store/amounts.js";
import type { Params, Snapshot } from "./store.js";

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
 *
 * From the `erc20_balances` index (indexes.ts): per file (a chunk's, or a merged run's) the
 * holder's net change of each token. Files are whole block ranges in chain order, so for a past
 * block every file's change counts whole where its last change is at or before `at`; the one
 * file that holds changes on both sides of `at` (its first change at or before, its last after)
 * is summed from the holder's own transfers instead (`transfers_by_address`) from that first
 * change to `at`. At the head no file straddles: one query, reading only the files whose key
 * filter admits the holder, plus one over the holder's transfers in the chunks not settled yet
 * (which get the index later, merges.ts).
 */
export async function tokenBalances(db: Snapshot, address: string, at?: number): Promise<TokenBalance[]> {
	const head = db.head();
	if (head === null) return [];
	const n = Math.min(at ?? head, head);
	const rows = await db.query(
		`SELECT token, ${limbSumsSql("FILTER (WHERE last_block <= $n)")},
			max(last_block) FILTER (WHERE last_block <= $n) AS seen,
			min(first_block) FILTER (WHERE last_block > $n) AS partial_from
		 FROM {erc20_balances} WHERE address = $address AND first_block <= $n GROUP BY token`,
		{ address, n },
		[0, n],
		address,
	);
	const out = new Map<string, TokenBalance>();
	const partial = new Map<string, number>();
	for (const r of rows) {
		const token = String(r.token);
		out.set(token, { token, raw: amountOf(LIMBS.map((l) => r[l] as string | null)), seenAt: Number(r.seen ?? 0) });
		if (r.partial_from !== null && r.partial_from !== undefined) partial.set(token, Number(r.partial_from));
	}
	// The straddling file's part, and the chunks no index file covers yet (the unsettled ones).
	const rest = [
		...(partial.size > 0 ? await fromTransfers(db, address, [[Math.min(...partial.values()), n]], partial) : []),
		...(await fromTransfers(db, address, lacking(db, "erc20_balances", n), null)),
	];
	for (const b of rest) {
		const known = out.get(b.token);
		out.set(b.token, {
			token: b.token,
			raw: (known?.raw ?? 0n) + b.raw,
			seenAt: Math.max(known?.seenAt ?? 0, b.seenAt),
		});
	}
	return [...out.values()].filter((b) => b.raw !== 0n).sort((a, b) => (a.token < b.token ? -1 : 1));
}

/**
 * The block ranges up to `n` of the chunks that have transfers but no file of `index` yet (not
 * settled: the settled-only indexes are derived in the background, merges.ts), adjacent ones
 * joined: what a balance sums from the transfers themselves.
 */
export function lacking(db: Snapshot, index: "erc20_balances" | "erc20_holders", n: number): [number, number][] {
	const out: [number, number][] = [];
	for (const c of db.chunks()) {
		if (c.from > n || !c.datasets.includes("transfers") || db.indexed(index, c)) continue;
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

/**
 * The holder's net ERC-20 changes from its own transfers in blocks `ranges`: of every token, or
 * (`since`) only of these tokens, each from its own first block.
 */
async function fromTransfers(
	db: Snapshot,
	address: string,
	ranges: [number, number][],
	since: Map<string, number> | null,
): Promise<TokenBalance[]> {
	if (ranges.length === 0) return [];
	const params: Params = { address };
	const blocks = inRanges(ranges, params);
	let tokens = "true";
	if (since) {
		tokens = [...since.entries()]
			.map(([token, block], i) => {
				params[`t${i}`] = token;
				params[`b${i}`] = block;
				return `(contract = $t${i} AND block_number >= $b${i})`;
			})
			.join(" OR ");
	}
	// +value where the holder receives, −value where it sends (a self-transfer nets zero).
	const sign = "((recipient = $address)::INT - (sender = $address)::INT)";
	const indexed = db.chunks().every((c) => !c.datasets.includes("transfers") || db.indexed("transfers_by_address", c));
	const source = indexed ? "{transfers_by_address}" : "{transfers}";
	const whose = indexed ? "address = $address" : "(sender = $address OR recipient = $address)";
	const rows = await db.query(
		`SELECT contract AS token, ${signedLimbSumsSql(sign, "value")}, max(block_number) AS seen
		 FROM ${source} WHERE ${whose} AND token_standard = 'erc20' AND value IS NOT NULL
		   AND (${blocks}) AND (${tokens})
		 GROUP BY contract`,
		params,
		[(ranges[0] as [number, number])[0], (ranges.at(-1) as [number, number])[1]],
		indexed ? address : undefined,
	);
	return rows.map((r) => ({
		token: String(r.token),
		raw: amountOf(LIMBS.map((l) => r[l] as string | null)),
		seenAt: Number(r.seen ?? 0),
	}));
}
