import { inList } from "./conditions.js";
import type { Params, Snapshot } from "./store/store.js";

/** A token's metadata as cached in the lake (store/holdings/token-metadata.ts); nulls where unread. */
export interface TokenMeta {
	standard: string | null;
	name: string | null;
	symbol: string | null;
	decimals: number | null;
}

const UNKNOWN: TokenMeta = { standard: null, name: null, symbol: null, decimals: null };

/** Metadata of `addresses` (unknown ones get nulls: not read yet, or not a token). */
export async function tokenMetas(db: Snapshot, addresses: readonly string[]): Promise<Map<string, TokenMeta>> {
	const out = new Map<string, TokenMeta>(addresses.map((a) => [a, UNKNOWN]));
	if (addresses.length === 0) return out;
	const params: Params = {};
	const rows = await db.query(
		`SELECT address, standard, name, symbol, decimals FROM {token_metadata} WHERE ${inList("address", "a", [...new Set(addresses)], params)}`,
		params,
	);
	for (const r of rows)
		out.set(String(r.address), {
			standard: (r.standard as string | null) ?? null,
			name: (r.name as string | null) ?? null,
			symbol: (r.symbol as string | null) ?? null,
			decimals: r.decimals === null || r.decimals === undefined ? null : Number(r.decimals),
		});
	return out;
}

/** tokenURI/uri of (contract, token id) pairs, keyed `contract:id`; absent where unread. */
export async function tokenUris(
	db: Snapshot,
	pairs: readonly { contract: string; tokenId: string }[],
): Promise<Map<string, string | null>> {
	const out = new Map<string, string | null>();
	if (pairs.length === 0) return out;
	const params: Params = {};
	const values = pairs.map((p, i) => {
		params[`c${i}`] = p.contract;
		params[`t${i}`] = p.tokenId;
		return `($c${i}, $t${i})`;
	});
	const rows = await db.query(
		`SELECT contract, token_id, token_uri FROM {token_uris} WHERE (contract, token_id) IN (SELECT (c, t) FROM (VALUES ${values.join(", ")}) v(c, t))`,
		params,
	);
	for (const r of rows) out.set(`${r.contract}:${r.token_id}`, (r.token_uri as string | null) ?? null);
	return out;
}
