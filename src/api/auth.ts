import { ApiError } from "./errors.js";
import { isValidKey, KEY_RULE_TEXT, type Keyring } from "./keys.js";

const HOW = "send Authorization: Bearer <key> (or Basic auth with the key as username and an empty password)";

/**
 * The API key of a request: `Authorization: Bearer <key>` (the spec) or
 * `Authorization: Basic base64(<key>:)` (what the official clients send). Either way the key must
 * pass the one rule of keys.ts (KEY_RULE), so both ways accept exactly the same keys.
 */
export function keyFromHeader(header: string | undefined): string {
	if (header === undefined || header.trim() === "")
		throw new ApiError(401, "MISSING_API_KEY", `an API key is required: ${HOW}`);
	const m = /^(Bearer|Basic)\s+(\S+)\s*$/i.exec(header);
	if (!m?.[1] || !m[2]) throw new ApiError(401, "INVALID_AUTHORIZATION", `malformed Authorization header: ${HOW}`);
	let key = m[2];
	if (m[1].toLowerCase() === "basic") {
		// Latin-1: one character per byte, so a non-ASCII byte stays visible (and fails the rule).
		const decoded = Buffer.from(m[2], "base64").toString("latin1");
		const colon = decoded.indexOf(":");
		key = colon === -1 ? decoded : decoded.slice(0, colon);
		if (!/^[A-Za-z0-9+/]+={0,2}$/.test(m[2]) || key === "") {
			throw new ApiError(401, "INVALID_AUTHORIZATION", `malformed Basic credentials: ${HOW}`);
		}
		// The key is the whole credential: a password would be ignored, so a client that sends one
		// (a key put in the wrong field, or a secret it thinks is checked) is told, not let in (issue 27).
		if (colon !== -1 && colon < decoded.length - 1)
			throw new ApiError(
				401,
				"INVALID_AUTHORIZATION",
				"Basic credentials with a password: the key goes in the username and the password must be empty (base64 of <key>:), or send Authorization: Bearer <key>",
			);
	}
	if (!isValidKey(key)) throw new ApiError(401, "INVALID_API_KEY", `not an API key: ${KEY_RULE_TEXT}`);
	return key;
}

/**
 * Checks the request's key; returns who is calling as the key's SHA-256 (hex), so what is kept
 * per caller (rate-limit buckets) is keyed by the hash, never by the key.
 */
export function authenticate(keyring: Keyring, header: string | undefined): string {
	// Fail closed, before looking at the request: with the key file damaged no key is known.
	const checked = keyring.check(() => keyFromHeader(header));
	if ("unavailable" in checked) throw new ApiError(503, "KEYS_UNAVAILABLE", checked.unavailable);
	if (!checked.hash)
		throw new ApiError(401, "INVALID_API_KEY", "unknown or revoked API key: create one with npm run keys -- create");
	return checked.hash.toString("hex");
}

/**
 * The header a webhook's feed asks the list route with: the hook owner's key hash, taken in place
 * of a key only beside the feed's own process token (app.ts; live/live-options.ts FEED_HEADER), as
 * the owner's key itself is never stored. A client sending it gains nothing: without the token it
 * is ignored.
 */
export const HOOK_OWNER_HEADER = "x-chainlake-hook-owner";

/** A webhook delivery's identity: its owner's key hash, while that key is valid. */
export function hookOwnerIdentity(keyring: Keyring, owner: string): string {
	if (!keyring.holds(owner))
		throw new ApiError(401, "INVALID_API_KEY", "the API key that made this webhook is revoked or unknown");
	return owner;
}
