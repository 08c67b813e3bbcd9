import type { Address } from "viem";
import { type RpcClient, RpcError } from "./client.js";

/*
 * Token metadata read from the node with viem's readContract over our RPC client (its batching,
 * retries and health figures). A call that reverts, returns nothing, or returns what does not
 * decode as the ABI says gives null: tokens are arbitrary contracts, and one odd token must never
 * fail a backfill. A node that does not answer at all fails the step instead (it runs again later).
 * viem is loaded at the first read (its ~400 modules were a third of every backfill and follow
 * start-up, and most runs read no metadata: a token is read once its first blocks are 64 deep).
 */

export interface TokenInfo {
	name: string | null;
	symbol: string | null;
	decimals: number | null;
}

const NFT_SIGNATURES = [
	"function name() view returns (string)",
	"function symbol() view returns (string)",
	"function tokenURI(uint256) view returns (string)",
	"function uri(uint256) view returns (string)",
] as const;

/** Longest name or symbol kept; longer text is taken for garbage. */
const MAX_TEXT = 200;
/** Longest token URI kept (data: URIs carry whole images). */
export const MAX_URI = 65_536;

/** viem's client over `rpc`, its readContract and the ABIs, loaded once. */
async function loadViem(rpc: RpcClient) {
	const [{ createPublicClient, custom, erc20Abi, parseAbi }, { readContract }] = await Promise.all([
		import("viem"),
		import("viem/actions"),
	]);
	const client = createPublicClient({
		transport: custom({ request: ({ method, params }) => rpc.request(method, (params ?? []) as unknown[]) }),
	});
	return { client, readContract, erc20Abi, nftAbi: parseAbi(NFT_SIGNATURES) };
}

export function createTokenReader(rpc: RpcClient) {
	let loaded: ReturnType<typeof loadViem> | undefined;
	const viem = () => {
		loaded ??= loadViem(rpc);
		return loaded;
	};
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
			const { client, readContract, erc20Abi, nftAbi } = await viem();
			const at = { address: address as Address };
			const abi = standard === "erc20" ? erc20Abi : nftAbi;
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
			const { client, readContract, nftAbi } = await viem();
			const v = await read(() =>
				readContract(client, {
					address: address as Address,
					abi: nftAbi,
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
