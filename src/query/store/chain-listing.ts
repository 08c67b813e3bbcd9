/**
 * The chains the data folder holds, from a listing kept for a second: apart from the store
 * because how fresh the listing is (and when it is taken again at once) is a rule of its own.
 */
import { chainsIn } from "../../util/chain.js";

export function chainListing(dataDir: string): { chains(): string[]; has(chain: string): boolean } {
	// The chains, from a listing of the data folder kept for a second (a request asks twice): a
	// chain not in it is looked for again at once, so a chain a backfill just started is served
	// by its first request; one whose folder was removed is forgotten within the second.
	let listed = { at: Number.NEGATIVE_INFINITY, chains: [] as string[] };
	const chains = (): string[] => {
		if (performance.now() - listed.at > 1000) listed = { at: performance.now(), chains: chainsIn(dataDir) };
		return listed.chains;
	};
	const has = (chain: string): boolean => {
		if (chains().includes(chain)) return true;
		listed = { at: performance.now(), chains: chainsIn(dataDir) };
		return listed.chains.includes(chain);
	};
	return { chains, has };
}
