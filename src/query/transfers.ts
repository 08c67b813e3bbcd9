import { inList } from "./conditions.js";
import { type ListResult, listRows, type Page } from "./list.js";
import type { Params, Snapshot } from "./store/store.js";
import { recordsSource, walletRows } from "./wallet-indexes.js";

export const TRANSFER_COLUMNS =
	"id, transaction_hash, block_hash, block_number, block_timestamp, origin, contract, sender, recipient, value, token_id, batch_values, batch_token_ids, asset_type, token_standard";

/** `asset_type` values of the API and the rows they select. */
export type AssetFilter = "native" | "ft" | "nft" | "multi";

export interface TransferFilter {
	/** Wallet the transfers are bound to (sender or recipient), if any. */
	address?: string;
	direction?: "incoming" | "outgoing";
	counterparty?: string;
	origin?: string;
	assets?: AssetFilter[];
	contracts?: string[];
	/** Token contract whose transfers are listed (`/contract/{c}/transfers`). */
	token?: string;
	/** One token id (ERC-721, ERC-1155, batches included). */
	tokenId?: string;
}

const ASSET_CONDITION: Record<AssetFilter, string> = {
	native: "asset_type = 'native'",
	ft: "asset_type = 'ft'",
	nft: "asset_type = 'nft'",
	multi: "token_standard = 'erc1155'",
};

/** Transfers matching `f`, a page at a time in chain order. */
export function findTransfers(db: Snapshot, f: TransferFilter, page: Page): Promise<ListResult> {
	const params: Params = {};
	// The conditions besides the token's (its index is keyed by the token instead).
	const rest: string[] = [];
	if (f.token) params.token = f.token;
	if (f.tokenId !== undefined) {
		params.token_id = f.tokenId;
		rest.push("(token_id = $token_id OR list_contains(batch_token_ids, $token_id))");
	}
	if (f.origin) {
		params.origin = f.origin;
		rest.push("origin = $origin");
	}
	// Every transfer is native, ft or nft: with all three asked (the benchmarks' and most
	// notebooks' call) the condition would only make each statement read the asset_type column.
	const everyAsset = (["native", "ft", "nft"] as const).every((a) => f.assets?.includes(a));
	if (f.assets?.length && !everyAsset) rest.push(`(${f.assets.map((a) => ASSET_CONDITION[a]).join(" OR ")})`);
	if (f.contracts?.length) rest.push(inList("contract", "contract", f.contracts, params));
	const where = f.token ? ["contract = $token", ...rest] : rest;
	if (!f.address) {
		const all = where.join(" AND ") || "true";
		// A token's transfers come from the contract-sorted index where the chunks have one.
		const indexes = f.token ? [recordsSource("token_transfers", ["address = $token", ...rest], f.token)] : undefined;
		return listRows(db, { dataset: "transfers", columns: TRANSFER_COLUMNS, where: all, params, indexes }, page);
	}
	// A wallet's transfers come from the address-sorted index where the chunks have one.
	const wallet = { address: f.address, direction: f.direction, counterparty: f.counterparty };
	const { where: all, indexes } = walletRows("transfers", wallet, where, params);
	return listRows(db, { dataset: "transfers", columns: TRANSFER_COLUMNS, where: all, params, indexes }, page);
}
