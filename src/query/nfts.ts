import { amountSql, somePositiveLimbSql } from "../store/format/amounts.js";
import { movesSql } from "../store/format/deltas.js";
import { inList } from "./conditions.js";
import { deltaSums, inRanges } from "./deltas.js";
import type { Params, Row, Snapshot } from "./store/store.js";

/** An ERC-721 or ERC-1155 holding: `amount` of token `tokenId` of collection `token`. */
export interface NftHolding {
	holder: string;
	token: string;
	tokenId: string;
	amount: bigint;
	/** The last block at or before the asked one that changed it. */
	seenAt: number;
}

/** The transfer that brought a holding to its holder (the last one in, at or before the block). */
export interface Arrival {
	block_number: number;
	block_timestamp: number;
	transaction_hash: string;
	sender: string;
	origin: string;
	standard: string;
}

const ZERO = "0x0000000000000000000000000000000000000000";

/** Token ids are decimal text: padded, they sort as numbers. */
const ID_ORDER = "lpad(token_id, 78, '0')";

/**
 * One page of NFT holdings as of block `n`, positive amounts only: what holder `value` holds
 * (by = address; by collection, then token id; optionally of one collection), or who holds
 * collection `value` (by = token; by token id, then holder). `after` is the previous page's last
 * (collection, id) or (id, holder). From the nft_balances/nft_holders indexes (query/deltas.ts).
 */
export async function nftHoldings(
	db: Snapshot,
	q: { by: "address" | "token"; value: string; n: number; contract?: string; limit: number; after?: [string, string] },
): Promise<{ items: NftHolding[]; hasMore: boolean }> {
	const sums = await deltaSums(db, { kind: "nft", by: q.by, value: q.value, n: q.n });
	const params: Params = { ...sums.params, limit: q.limit + 1 };
	const order = q.by === "address" ? ["token", ID_ORDER] : [ID_ORDER, "address"];
	const where = [];
	// Positive amounts only (the zero address holds minus the mints).
	where.push("b > 0");
	// A burn sends a token to the zero address, which holds it nowhere.
	if (q.by === "token") {
		params.zero = ZERO;
		where.push("address <> $zero");
	}
	if (q.contract) {
		params.contract = q.contract;
		where.push("token = $contract");
	}
	if (q.after) {
		params.ka = q.after[0];
		params.kb = q.after[1];
		const [a, b] = q.by === "address" ? ["$ka", "lpad($kb, 78, '0')"] : ["lpad($ka, 78, '0')", "$kb"];
		where.push(`(${order[0]}, ${order[1]}) > (${a}, ${b})`);
	}
	const other = q.by === "address" ? "token" : "address";
	const rows = await db.query(
		`WITH ${sums.ctes.join(", ")}, t AS (SELECT ${other}, token_id, seen, ${amountSql()} AS b FROM sums WHERE ${somePositiveLimbSql()})
		 SELECT ${other}, token_id, seen, CAST(b AS VARCHAR) AS raw FROM t
		 WHERE ${where.join(" AND ")} ORDER BY ${order.join(", ")} LIMIT $limit`,
		params,
		sums.window,
		sums.key,
	);
	return {
		items: rows.slice(0, q.limit).map((r) => ({
			holder: q.by === "address" ? q.value : String(r.address),
			token: q.by === "token" ? q.value : String(r.token),
			tokenId: String(r.token_id),
			amount: BigInt(String(r.raw)),
			seenAt: Number(r.seen ?? 0),
		})),
		hasMore: rows.length > q.limit,
	};
}

/** `holder:token:id` of a holding, the key of arrivals. */
export const holdingKey = (h: { holder: string; token: string; tokenId: string }) =>
	`${h.holder}:${h.token}:${h.tokenId}`;

/**
 * The transfer that brought each holding, at or before block `n`: looked for first in the block
 * that last changed it (an ERC-721 holding's arrival always is), then, for what is left (an
 * ERC-1155 holding partly sent on since), in every block up to `n`.
 */
export async function arrivals(
	db: Snapshot,
	holdings: readonly NftHolding[],
	n: number,
): Promise<Map<string, Arrival>> {
	const out = new Map<string, Arrival>();
	const find = async (wanted: readonly NftHolding[], ranges: [number, number][], atSeen: boolean) => {
		if (wanted.length === 0) return;
		const params: Params = {};
		const tokens = inList("contract", "k", [...new Set(wanted.map((h) => h.token))], params);
		const values = wanted.map((h, i) => {
			params[`h${i}`] = h.holder;
			params[`t${i}`] = h.token;
			params[`i${i}`] = h.tokenId;
			params[`b${i}`] = h.seenAt;
			return `($h${i}, $t${i}, $i${i}, $b${i}::BIGINT)`;
		});
		const src = `(SELECT * FROM {transfers} WHERE ${tokens} AND (${inRanges(ranges, params)}))`;
		const extra = ["id", "transaction_hash", "block_timestamp", "origin", "token_standard"];
		const rows: Row[] = await db.query(
			`SELECT m.address, m.token, m.token_id, ${["block_number", ...extra.slice(1), "sender"].map((c) => `arg_max(m.${c}, m.id) AS ${c}`).join(", ")}
			 FROM (${movesSql(src, "nft", [...extra, "sender"])}) m
			 JOIN (VALUES ${values.join(", ")}) w(address, token, token_id, seen)
			   ON m.address = w.address AND m.token = w.token AND m.token_id = w.token_id${atSeen ? " AND m.block_number = w.seen" : ""}
			 WHERE m.sign = 1 GROUP BY m.address, m.token, m.token_id`,
			params,
			[ranges[0]?.[0] ?? 0, ranges.at(-1)?.[1] ?? n],
		);
		for (const r of rows)
			out.set(`${r.address}:${r.token}:${r.token_id}`, {
				block_number: Number(r.block_number),
				block_timestamp: Number(r.block_timestamp),
				transaction_hash: String(r.transaction_hash),
				sender: String(r.sender),
				origin: String(r.origin),
				standard: String(r.token_standard),
			});
	};
	const blocks = [...new Set(holdings.map((h) => h.seenAt))].sort((a, b) => a - b);
	await find(
		holdings,
		blocks.map((b): [number, number] => [b, b]),
		true,
	);
	await find(
		holdings.filter((h) => !out.has(holdingKey(h))),
		[[0, n]],
		false,
	);
	return out;
}
