import type { Row, Snapshot } from "../../query/store/store.js";
import { tokenMetas } from "../../query/tokens.js";
import { findTransfers, type TransferFilter } from "../../query/transfers.js";
import { pageOf } from "../answers/list-reply.js";
import { badRequest } from "../errors.js";
import { NO_PRICE } from "../params/holdings-params.js";
import type { ListQuery } from "../params/params.js";
import type { ResolvedRange } from "../params/range.js";
import { collection, contents } from "./nft-items.js";

/*
 * NFT transfer histories (an address's, a token's): transfers rows expanded to one item per NFT
 * moved (a TransferBatch row moves several), paged so a page may end inside a batch.
 */

/** One NFT moved by a transfers row: a TransferBatch row moves several, item `index` of them. */
export interface Moved {
	row: Row;
	tokenId: string;
	amount: string;
	index: number;
	/** How many the row moves. */
	of: number;
}

/** The NFTs a transfers row moves (only those of id `only`, if given). */
export function moved(r: Row, only?: string): Moved[] {
	const ids = (r.batch_token_ids as string[] | null) ?? null;
	if (!ids) return [{ row: r, tokenId: String(r.token_id), amount: String(r.value ?? "1"), index: 0, of: 1 }];
	const values = (r.batch_values as string[]) ?? [];
	return ids
		.map((tokenId, index) => ({ row: r, tokenId, amount: String(values[index] ?? "0"), index, of: ids.length }))
		.filter((x) => only === undefined || x.tokenId === only);
}

/** An item's id: its row's, with `:<index>` for an item of a TransferBatch row. */
const movedId = (m: Moved) => (m.of > 1 ? `${m.row.id}:${m.index}` : String(m.row.id));

/** The id just before (asc) or after (desc) `id` in id order: item ids are one 28-digit hex number. */
function neighbourId(id: string, order: "asc" | "desc"): string | undefined {
	const n = BigInt(`0x${id.replaceAll("-", "")}`) + (order === "asc" ? -1n : 1n);
	if (n < 0n) return undefined;
	const hex = n.toString(16).padStart(28, "0");
	return `${hex.slice(0, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const HISTORY_OFFSET = /^([0-9a-f]{16}-[0-9a-f]{4}-[0-9a-f]{8})(?::(\d{1,6}))?$/;

/**
 * A page of NFT history: transfers rows matching `f` expanded to one item per NFT moved, exactly
 * `limit` items while more follow. A page may end inside a TransferBatch row: its next_offset is
 * then `<row id>:<index>`, and the next page starts at that row's following item.
 */
export async function historyPage(
	db: Snapshot,
	f: TransferFilter,
	q: ListQuery,
	range: ResolvedRange,
	only?: string,
): Promise<{ items: Moved[]; hasMore: boolean; next: string | null }> {
	const m = q.offset === undefined ? null : HISTORY_OFFSET.exec(q.offset);
	if (q.offset !== undefined && !m)
		throw badRequest("INVALID_OFFSET", "offset must be the next_offset of the previous page");
	const page = pageOf({ ...q, offset: undefined }, range);
	const [resumeRow, resumeAt] = m ? [m[1] as string, m[2] === undefined ? null : Number(m[2])] : [null, null];
	// Resuming inside a row: read from that row itself.
	let after: string | undefined =
		resumeRow === null ? undefined : resumeAt === null ? resumeRow : neighbourId(resumeRow, page.order);
	const items: Moved[] = [];
	let more = true;
	while (more && items.length <= page.limit) {
		const result = await findTransfers(db, f, { ...page, after });
		for (const row of result.rows)
			for (const x of moved(row, only))
				if (!(resumeAt !== null && row.id === resumeRow && x.index <= resumeAt)) items.push(x);
		more = result.hasMore;
		after = result.rows.at(-1)?.id as string | undefined;
		if (result.rows.length === 0) break;
	}
	const kept = items.slice(0, page.limit);
	const hasMore = items.length > page.limit;
	const last = kept.at(-1);
	const next =
		!hasMore || !last ? null : last.index === last.of - 1 ? String(last.row.id) : `${last.row.id}:${last.index}`;
	return { items: kept, hasMore, next };
}

/** History items of NFTs moved, with collection and (if asked) metadata. */
export async function historyItems(db: Snapshot, items: Moved[], metadata: boolean | undefined) {
	const metas = await tokenMetas(db, [...new Set(items.map((i) => String(i.row.contract)))]);
	const content = await contents(
		db,
		metadata,
		items.map((i) => ({ contract: String(i.row.contract), tokenId: i.tokenId })),
	);
	return items.map((m) => {
		const { row, tokenId, amount } = m;
		return {
			id: movedId(m),
			token_id: tokenId,
			amount,
			collection: collection(String(row.contract), metas.get(String(row.contract)), String(row.token_standard)),
			metadata: content.get(`${row.contract}:${tokenId}`) ?? null,
			transfer: {
				block_number: Number(row.block_number),
				block_timestamp: Number(row.block_timestamp),
				tx_hash: String(row.transaction_hash),
				from: String(row.sender),
				to: String(row.recipient),
				origin: String(row.origin),
				owner: String(row.recipient),
			},
			sale_price: NO_PRICE,
		};
	});
}

/** The list answer of a history page. */
export const historyReply = async (
	db: Snapshot,
	range: ResolvedRange,
	p: Awaited<ReturnType<typeof historyPage>>,
	metadata?: boolean,
) => ({
	range: { has_more: p.hasMore, start_block: range.start, end_block: range.end, next_offset: p.next },
	items: await historyItems(db, p.items, metadata),
});
