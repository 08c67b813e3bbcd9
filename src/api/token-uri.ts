/*
 * What an NFT's token URI points at, for the NFT API's `metadata` object. `data:` URIs (on-chain
 * metadata) are decoded here. Remote URIs (http, https) are fetched only where the operator
 * allows it (CHAINLAKE_FETCH_TOKEN_URIS=1): a fetch reaches any host a token's contract names,
 * so it is off by default; ipfs: and other schemes are never fetched (no gateway is assumed).
 */

export interface TokenContent {
	token_uri: string | null;
	content: unknown;
	is_json: boolean;
}

/** Whether this process fetches remote token URIs (the operator's CHAINLAKE_FETCH_TOKEN_URIS=1). */
export const fetchesTokenUris = (): boolean => process.env.CHAINLAKE_FETCH_TOKEN_URIS === "1";

const FETCH_TIMEOUT_MS = 5_000;
const MAX_BYTES = 1 << 20;

/** Deepest JSON nesting served as parsed content; deeper (a contract can nest thousands) stays text. */
const MAX_DEPTH = 64;
const depthOf = (v: unknown, limit: number): number => {
	if (limit < 0 || v === null || typeof v !== "object") return 0;
	let deepest = 0;
	for (const x of Object.values(v)) deepest = Math.max(deepest, depthOf(x, limit - 1));
	return deepest + 1;
};

/** Text → its JSON value where it parses (and is not absurdly deep), else the text. */
function asContent(text: string): { content: unknown; is_json: boolean } {
	try {
		const parsed: unknown = JSON.parse(text);
		if (depthOf(parsed, MAX_DEPTH) > MAX_DEPTH) return { content: text, is_json: false };
		return { content: parsed, is_json: true };
	} catch {
		return { content: text, is_json: false };
	}
}

/** The text of a `data:` URI (RFC 2397), or null when it is malformed. */
export function decodeDataUri(uri: string): string | null {
	const m = /^data:([^,]*),(.*)$/s.exec(uri);
	if (!m) return null;
	const [, meta = "", body = ""] = m;
	try {
		if (/;base64$/i.test(meta)) return Buffer.from(body, "base64").toString("utf8");
		return decodeURIComponent(body);
	} catch {
		return null;
	}
}

/** Fetches an http(s) URI's text, bounded in time and size; null on any failure. */
async function fetchText(uri: string): Promise<string | null> {
	try {
		const res = await fetch(uri, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: "follow" });
		if (!res.ok || !res.body) return null;
		const chunks: Buffer[] = [];
		let size = 0;
		for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
			size += chunk.length;
			if (size > MAX_BYTES) return null;
			chunks.push(Buffer.from(chunk));
		}
		return Buffer.concat(chunks).toString("utf8");
	} catch {
		return null;
	}
}

/** The `metadata` object of an NFT whose token URI is `uri` (null: not read, or the call reverted). */
export async function tokenContent(uri: string | null | undefined, tokenId: string): Promise<TokenContent> {
	if (!uri) return { token_uri: uri ?? null, content: null, is_json: false };
	if (uri.startsWith("data:")) {
		const text = decodeDataUri(uri);
		return { token_uri: uri, ...(text === null ? { content: null, is_json: false } : asContent(text)) };
	}
	// ERC-1155 URIs stand for every id: {id} is the id as 64 hex digits.
	const resolved = uri.replaceAll("{id}", BigInt(tokenId).toString(16).padStart(64, "0"));
	if (fetchesTokenUris() && /^https?:\/\//i.test(resolved)) {
		const text = await fetchText(resolved);
		if (text !== null) return { token_uri: resolved, ...asContent(text) };
	}
	return { token_uri: resolved, content: null, is_json: false };
}
