import { type ListResult, listRows, type Page } from "./list.js";
import type { Store } from "./store.js";

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
}

const ASSET_CONDITION: Record<AssetFilter, string> = {
	native: "asset_type = 'native'",
	ft: "asset_type = 'ft'",
	nft: "asset_type = 'nft'",
	multi: "token_standard = 'erc1155'",
};

/** Transfers matching `f`, a page at a time in chain order. */
export function findTransfers(store: Store, chain: string, f: TransferFilter, page: Page): Promise<ListResult> {
	const where: string[] = [];
	const params: Record<string, string> = {};
	if (f.address) {
		params.address = f.address;
		where.push(
			f.direction === "incoming"
				? "recipient = $address"
				: f.direction === "outgoing"
					? "sender = $address"
					: "(sender = $address OR recipient = $address)",
		);
		if (f.counterparty) {
			params.counterparty = f.counterparty;
			where.push(
				f.direction === "incoming"
					? "sender = $counterparty"
					: f.direction === "outgoing"
						? "recipient = $counterparty"
						: "((sender = $address AND recipient = $counterparty) OR (recipient = $address AND sender = $counterparty))",
			);
		}
	}
	if (f.token) {
		params.token = f.token;
		where.push("contract = $token");
	}
	if (f.origin) {
		params.origin = f.origin;
		where.push("origin = $origin");
	}
	if (f.assets && f.assets.length > 0) where.push(`(${f.assets.map((a) => ASSET_CONDITION[a]).join(" OR ")})`);
	if (f.contracts && f.contracts.length > 0) {
		f.contracts.forEach((c, i) => {
			params[`contract${i}`] = c;
		});
		where.push(`contract IN (${f.contracts.map((_, i) => `$contract${i}`).join(", ")})`);
	}
	return listRows(
		store,
		chain,
		{ dataset: "transfers", columns: TRANSFER_COLUMNS, where: where.join(" AND ") || "true", params },
		page,
	);
}
