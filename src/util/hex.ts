/**
 * Conversions from JSON-RPC quantities and data. Every uint256 leaves here as a decimal
 * string (exact, and what the API returns); only values that fit a JS number by protocol
 * (block numbers, gas, indexes) become numbers.
 */

export type Hex = `0x${string}`;

/** A JSON-RPC quantity as a JS number; throws when it could not be exact. */
export function hexToNumber(hex: string): number {
	const n = Number.parseInt(hex, 16);
	if (!Number.isFinite(n) || !/^0x[0-9a-fA-F]+$/.test(hex)) {
		throw new TypeError(`not a hex quantity: ${JSON.stringify(hex)}`);
	}
	if (n > Number.MAX_SAFE_INTEGER) throw new RangeError(`quantity ${hex} exceeds 2^53`);
	return n;
}

export function hexToNumberOrNull(hex: string | null | undefined): number | null {
	return hex == null ? null : hexToNumber(hex);
}

/** A JSON-RPC quantity (any size) as an exact decimal string. */
export function hexToDecimal(hex: string): string {
	if (!/^0x[0-9a-fA-F]*$/.test(hex)) throw new TypeError(`not a hex quantity: ${JSON.stringify(hex)}`);
	return hex === "0x" ? "0" : BigInt(hex).toString();
}

export function hexToDecimalOrNull(hex: string | null | undefined): string | null {
	return hex == null ? null : hexToDecimal(hex);
}

/** Lowercase 0x hex, or null for an absent value. */
export function lower(hex: string | null | undefined): string | null {
	return hex == null ? null : hex.toLowerCase();
}

/** The address held in the low 20 bytes of a 32-byte word, or null when the high 12 bytes are not zero. */
export function wordToAddress(word: string | null | undefined): string | null {
	if (word == null || !/^0x000000000000000000000000[0-9a-fA-F]{40}$/.test(word)) return null;
	return `0x${word.slice(26).toLowerCase()}`;
}

/** Splits 0x-prefixed data into 32-byte words (hex, no prefix); null when it is not whole words of hex. */
export function dataWords(data: string): string[] | null {
	const body = data.slice(2);
	if (body.length % 64 !== 0 || !/^[0-9a-fA-F]*$/.test(body)) return null;
	const words: string[] = [];
	for (let i = 0; i < body.length; i += 64) words.push(body.slice(i, i + 64));
	return words;
}

export function wordToDecimal(word: string): string {
	return BigInt(`0x${word}`).toString();
}
