import type { SynthTargets } from "../../src/synth/targets.js";

/**
 * The mixed workload of the load test: what a notebook or an explorer front end asks most,
 * spread over every address, hash, factory and token the targets file names (heavy, median and
 * cold alike), so requests hit different files and row groups instead of one cached answer.
 * Paths are relative to `/<chain>/v1`.
 */
export function mixedPaths(t: SynthTargets): string[] {
	const paths: string[] = ["/blocks/latest", "/blocks?block_number_start=-99&block_number_end=latest&limit=100"];
	for (const tier of ["heavy", "median", "cold"] as const) {
		for (const { value } of t.addresses[tier]) {
			paths.push(`/address/${value}/transfers?asset_type=native,ft,nft&limit=100`);
			paths.push(`/address/${value}/transfers?asset_type=ft&order=desc&limit=25`);
		}
		for (const { value } of t.txAccounts[tier]) paths.push(`/address/${value}/txs?limit=100`);
	}
	for (const hash of t.txHashes) paths.push(`/txs/${hash}`);
	for (const hash of t.blockHashes) paths.push(`/blocks/${hash}`);
	for (const { value } of [...t.factories.heavy, ...t.factories.median]) {
		paths.push(`/contracts/creates?caller=${value}&limit=100`);
	}
	for (const { value } of [...t.tokens.heavy, ...t.tokens.median]) {
		paths.push(`/contract/${value}/transfers?asset_type=ft,nft&block_number_start=-1000&block_number_end=latest`);
	}
	return paths;
}
