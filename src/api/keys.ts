import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { basename, dirname } from "node:path";
import { ChainlakeError, UserInputError } from "../util/errors.js";
import { mkdirDurablySync } from "../util/fsync.js";
import type { Logger } from "../util/logger.js";
import { writeFileDurablySync } from "../util/temp-files.js";

/** A stored key: only its SHA-256 is kept (keys are 256 random bits, so a fast hash suffices). */
export interface StoredKey {
	id: string;
	name: string;
	hash: string;
	created_at: string;
	revoked_at?: string;
}

export const hashKey = (key: string) => createHash("sha256").update(key, "utf8").digest();

/**
 * The one rule for what a key is, whichever way it is sent: RFC 6750's token (b64token: letters,
 * digits, - . _ ~ + /, then = only at the end). Such a key goes as `Bearer <key>` through any
 * client or proxy that checks the token's syntax, and as the Basic username: no ':' (which would
 * end the username), and ASCII only, so base64 of its UTF-8 and of its Latin-1 bytes are the same.
 */
const KEY_RULE = /^[A-Za-z0-9._~+/-]+=*$/;
export const KEY_RULE_TEXT =
	"an API key is letters, digits and - . _ ~ + / (then = only at the end), so that it can be sent both as Bearer <key> and as Basic base64(<key>:)";
export const isValidKey = (key: string) => KEY_RULE.test(key);

/** The key file cannot be used: unreadable, not JSON, or not the list of keys it should be. */
export class KeysFileError extends ChainlakeError {
	constructor(
		readonly path: string,
		readonly detail: string,
		/** The file system's error when the file cannot be read (the CLIs name its folder instead). */
		cause?: unknown,
	) {
		super(
			"KEYS_FILE_DAMAGED",
			`the API key file ${path} is damaged (${detail}): fix it or restore it from a backup; it is a JSON list of {"id", "name", "hash", "created_at"[, "revoked_at"]}, and \`npm run keys -- list --keys-file ${path}\` shows its keys once it reads`,
			{ cause },
		);
		this.name = "KeysFileError";
	}
}

/** The keys of the file (none if there is no file); a KeysFileError if it cannot be used. */
export function readKeys(path: string): StoredKey[] {
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch (err) {
		const code = (err as NodeJS.ErrnoException).code;
		if (code === "ENOENT") return [];
		throw new KeysFileError(path, `it cannot be read: ${code ?? (err as Error).message}`, err);
	}
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch (err) {
		throw new KeysFileError(path, `not JSON: ${(err as Error).message}`);
	}
	if (!Array.isArray(parsed)) throw new KeysFileError(path, "not a JSON list");
	parsed.forEach((k: unknown, i) => {
		const problem = storedKeyProblem(k);
		if (problem) throw new KeysFileError(path, `entry ${i + 1}: ${problem}`);
	});
	return parsed as StoredKey[];
}

function storedKeyProblem(k: unknown): string | null {
	if (typeof k !== "object" || k === null || Array.isArray(k)) return "not an object";
	const e = k as Record<string, unknown>;
	if (typeof e.id !== "string" || e.id === "") return '"id" is not a non-empty string';
	if (typeof e.name !== "string") return '"name" is not a string';
	if (typeof e.hash !== "string" || !/^[0-9a-f]{64}$/i.test(e.hash)) return '"hash" is not 64 hex digits (a SHA-256)';
	if (typeof e.created_at !== "string") return '"created_at" is not a string';
	if (e.revoked_at !== undefined && (typeof e.revoked_at !== "string" || e.revoked_at === ""))
		return '"revoked_at" is not a date string (leave it out for a key in use)';
	return null;
}

/** Replaces the key file durably (a revocation must survive a power loss); nothing half-written, no `.tmp` left on a failure. */
function writeKeys(path: string, keys: StoredKey[]): void {
	mkdirDurablySync(dirname(path));
	writeFileDurablySync(path, `${JSON.stringify(keys, null, 1)}\n`, 0o600);
}

/** Creates a key, stores its hash, and returns the key itself: the only time it is ever shown. */
export function createKey(path: string, name: string): { key: string; id: string } {
	// base64url: letters, digits, - and _, within KEY_RULE.
	const key = `cl_${randomBytes(32).toString("base64url")}`;
	const id = randomBytes(6).toString("hex");
	const keys = readKeys(path);
	keys.push({ id, name, hash: hashKey(key).toString("hex"), created_at: new Date().toISOString() });
	writeKeys(path, keys);
	return { key, id };
}

export function revokeKey(path: string, id: string): boolean {
	const keys = readKeys(path);
	const k = keys.find((x) => x.id === id && !x.revoked_at);
	if (!k) return false;
	k.revoked_at = new Date().toISOString();
	writeKeys(path, keys);
	return true;
}

/**
 * Checks presented keys against the environment's keys and the key file. The file is re-read
 * when it changes, so a new or revoked key takes effect at once. Every stored hash is compared,
 * in constant time, so timing does not tell how close a guess came.
 *
 * A damaged key file fails closed: at creation it throws (KeysFileError, naming the file); if it
 * becomes damaged later, no key is accepted (env keys neither) and `unavailable()` says why, until
 * the file reads again. Env keys that break KEY_RULE are refused at creation (UserInputError).
 */
export function createKeyring(opts: { path: string; envKeys?: string[]; log?: Pick<Logger, "info" | "error"> }) {
	const envKeys = opts.envKeys ?? [];
	envKeys.forEach((k, i) => {
		// Never the key itself in the message: only where it is.
		if (k !== "" && !isValidKey(k)) {
			throw new UserInputError(
				"INVALID_API_KEYS_ENV",
				`CHAINLAKE_API_KEYS entry ${i + 1} of ${envKeys.length} (comma-separated) is not a usable API key: ${KEY_RULE_TEXT}. Fix or remove that entry, or use npm run keys -- create`,
			);
		}
	});
	const envHashes = envKeys.filter(Boolean).map(hashKey);
	let fileHashes: Buffer[] = [];
	let damaged: KeysFileError | null = null;
	let seen = "";
	/** Past creation: changes of the file are logged (at creation a damaged file throws instead). */
	let serving = false;
	const refresh = () => {
		let stamp = "none";
		try {
			// (No exception for a missing file: building one costs more than the stat, every request.)
			const st = statSync(opts.path, { throwIfNoEntry: false });
			if (st) stamp = `${st.ino}:${st.mtimeMs}:${st.ctimeMs}:${st.size}`;
		} catch {}
		if (stamp === seen) return;
		seen = stamp;
		try {
			fileHashes = readKeys(opts.path)
				.filter((k) => !k.revoked_at)
				.map((k) => Buffer.from(k.hash, "hex"));
			if (damaged) opts.log?.info(`the API key file ${opts.path} reads again: API keys accepted again`);
			damaged = null;
		} catch (err) {
			if (!(err instanceof KeysFileError)) throw err;
			// Not the last good set: a key revoked by an edit that broke the file must not keep working.
			fileHashes = [];
			if (serving && damaged?.message !== err.message)
				opts.log?.error(`${err.message}; until then every data request is refused`);
			damaged = err;
		}
	};
	refresh();
	if (damaged) throw damaged;
	serving = true;
	/** Why no key can be checked now (the key file is damaged), for clients: the file's name, not its path. */
	const unavailable = (): string | null => {
		refresh();
		return damaged
			? `API keys cannot be checked: the server's key file ${basename(opts.path)} is damaged; its operator must fix it or restore it (the server log says what is wrong). Retry later`
			: null;
	};
	/** The key's hash if it is one of the keys as last read (no look at the file). */
	const known = (key: string): Buffer | null => {
		if (damaged) return null;
		const h = hashKey(key);
		let ok = false;
		for (const candidate of [...envHashes, ...fileHashes]) {
			if (candidate.length === h.length && timingSafeEqual(candidate, h)) ok = true;
		}
		return ok ? h : null;
	};
	return {
		verify(key: string): boolean {
			refresh();
			return known(key) !== null;
		},
		/**
		 * A request's check: why no key can be checked (the file looked at again, as `unavailable`),
		 * else `key()`'s hash if it is a valid key, or null. One look at the file and one hash per request.
		 */
		check(key: () => string): { unavailable: string } | { hash: Buffer | null } {
			const why = unavailable();
			return why !== null ? { unavailable: why } : { hash: known(key()) };
		},
		unavailable,
		/** Whether the key of this SHA-256 (hex) is valid now (a webhook's owner: its hooks pause once it is revoked). */
		holds(hashHex: string): boolean {
			refresh();
			if (damaged || !/^[0-9a-f]{64}$/.test(hashHex)) return false;
			const h = Buffer.from(hashHex, "hex");
			return [...envHashes, ...fileHashes].some((c) => c.equals(h));
		},
		count(): number {
			refresh();
			return envHashes.length + fileHashes.length;
		},
	};
}

export type Keyring = ReturnType<typeof createKeyring>;
