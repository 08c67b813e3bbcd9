import { existsSync, readdirSync } from "node:fs";
import { UserInputError } from "./errors.js";

/** A chain as named in paths and data folders: `eip155-<chain number>`. */
export interface ChainRef {
	id: string;
	number: number;
}

const CHAIN_ID = /^eip155-([1-9][0-9]{0,15})$/;

export function isChainId(value: string): boolean {
	return CHAIN_ID.test(value) && Number.isSafeInteger(Number(value.slice("eip155-".length)));
}

export function parseChainId(value: string): ChainRef {
	const m = CHAIN_ID.exec(value);
	const n = m?.[1] ? Number(m[1]) : Number.NaN;
	if (!Number.isSafeInteger(n)) {
		throw new UserInputError(
			"INVALID_CHAIN",
			`chain id ${JSON.stringify(value)} is not of the form eip155-<chain number> (e.g. eip155-1 for Ethereum mainnet)`,
		);
	}
	return { id: value, number: n };
}

/** Chains present in a data folder (sub-folders named eip155-<n>). */
export function chainsIn(dataDir: string): string[] {
	if (!existsSync(dataDir)) return [];
	return readdirSync(dataDir, { withFileTypes: true })
		.filter((e) => e.isDirectory() && /^eip155-\d+$/.test(e.name))
		.map((e) => e.name)
		.sort();
}
