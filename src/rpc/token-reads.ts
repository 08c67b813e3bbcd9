import { type Address, createPublicClient, custom, erc20Abi, parseAbi } from "viem";
import { readContract } from "viem/actions";
import { type RpcClient, RpcError } from "./client.js";

/*
 * Token metadata read from the node with viem's readContract over our RPC client (its batching,
 * retries and health figures). A call that reverts, returns nothing, or returns what does not
 * decode as the ABI says gives null: tokens are arbitrary contracts, and one odd token must never
 * fail a backfill. A node that does not answer at all fails the step instead (it runs again later).
 */

export interface TokenInfo {
	name: string | null;
	symbol: string | null;
	decimals: number | null;
}

const NFT_ABI = parseAbi([
	"function name() view returns (string)",
	"function symbol() view returns (string)",
	"function tokenURI(uint256) view returns (string)",
	"function uri(uint256) view returns (string)",
]);

/** Longest name or symbol kept; longer text is taken for garbage. */
const MAX_TEXT = 200;
/** Longest token URI kept (data: URIs carry whole images). */
export const MAX_URI = 65_536;

export function createTokenReader(rpc: RpcClient) {
	const client = createPublicClient({
		transport: custom({ request: ({ method, params }) => rpc.request(method, (params ?? []) as unknown[]) }),
	});
	const text = (v: unknown, max: number) =>
		typeof v === "string" && v.length <= max && !v.includes("\u0000") ? v : null;
	// A call the token answered badly is null; a node that did not answer (retries exhausted) fails
	// the step, which runs again later, so no token is cached as null for a node's hiccup.
	const read = async <T>(call: () => Promise<T>): Promise<T | null> => {
		try {
			return await call();
		} catch (err) {
			for (let e: unknown = err; e instanceof Error; e = e.cause) if (e instanceof RpcError && e.retryable) throw e;
			return null;
		}
	};
	return {
		/**
		 * name, symbol and decimals (ERC-20; an NFT collection has no decimals), as the token answers
		 * now: the latest state, which every node keeps (an old block's needs an archive node).
		 */
		async info(address: string, standard: string): Promise<TokenInfo> {
			const at = { address: address as Address };
			const abi = standard === "erc20" ? erc20Abi : NFT_ABI;
			const [name, symbol, decimals] = await Promise.all([
				read(() => readContract(client, { ...at, abi, functionName: "name" })),
				read(() => readContract(client, { ...at, abi, functionName: "symbol" })),
				standard === "erc20"
					? read(() => readContract(client, { ...at, abi: erc20Abi, functionName: "decimals" }))
					: null,
			]);
			return {
				name: text(name, MAX_TEXT),
				symbol: text(symbol, MAX_TEXT),
				// uint8 by the ABI; anything else failed to decode above.
				decimals: typeof decimals === "number" ? decimals : null,
			};
		},
		/** The node's own accounts (a dev node's funded ones; a public node has none). */
		async accounts(): Promise<string[]> {
			const accounts = await read(() => rpc.request<string[]>("eth_accounts", []));
			return (accounts ?? []).map((a) => a.toLowerCase());
		},
		/** An account's native balance at block `block` (wei); null where the node has no state that old. */
		async balance(address: string, block: number): Promise<bigint | null> {
			const wei = await read(() => rpc.request<string>("eth_getBalance", [address, `0x${block.toString(16)}`]));
			return wei === null ? null : BigInt(wei);
		},
		/** tokenURI (ERC-721) or uri (ERC-1155) of one token id, as the token answers now. */
		async uri(address: string, standard: string, tokenId: string): Promise<string | null> {
			const functionName = standard === "erc1155" ? "uri" : "tokenURI";
			const v = await read(() =>
				readContract(client, {
					address: address as Address,
					abi: NFT_ABI,
					functionName,
					args: [BigInt(tokenId)],
				}),
			);
			return text(v, MAX_URI);
		},
	};
}

export type TokenReader = ReturnType<typeof createTokenReader>;

/**
 * The token metadata source of a writer with node `rpc`. NFT token URIs cost one call per token
 * id (tens of millions on mainnet): CHAINLAKE_TOKEN_URIS=0 leaves them out.
 */
export const metadataSource = (rpc: RpcClient) => ({
	reader: createTokenReader(rpc),
	uris: process.env.CHAINLAKE_TOKEN_URIS !== "0",
});
