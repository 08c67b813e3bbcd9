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
 * filter admits the holder.
 */
export async function tokenBalances(db: Snapshot, address: string, at?: number): Promise<TokenBalance[]> {
	const head = db.head();
	if (head === null) return [];
	const n = Math.min(at ?? head, head);
	if (!db.chunks().every((c) => !c.datasets.includes("transfers") || db.indexed("erc20_balances", c)))
		return fromTransfers(db, address, 0, n, null);
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
	if (partial.size > 0) {
		for (const b of await fromTransfers(db, address, Math.min(...partial.values()), n, partial)) {
			const known = out.get(b.token);
			out.set(b.token, {
				token: b.token,
				raw: (known?.raw ?? 0n) + b.raw,
				seenAt: Math.max(known?.seenAt ?? 0, b.seenAt),
			});
		}
	}
	return [...out.values()].filter((b) => b.raw !== 0n).sort((a, b) => (a.token < b.token ? -1 : 1));
}

/**
 * The holder's net ERC-20 changes from its own transfers in blocks [from, to]: of every token, or
 * (`since`) only of these tokens, each from its own first block.
 */
async function fromTransfers(
	db: Snapshot,
	address: string,
	from: number,
	to: number,
	since: Map<string, number> | null,
): Promise<TokenBalance[]> {
	const params: Params = { address, from, to };
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
		   AND block_number BETWEEN $from AND $to AND (${tokens})
		 GROUP BY contract`,
		params,
		[from, to],
		indexed ? address : undefined,
	);
	return rows.map((r) => ({
		token: String(r.token),
		raw: amountOf(LIMBS.map((l) => r[l] as string | null)),
		seenAt: Number(r.seen ?? 0),
	}));
}
