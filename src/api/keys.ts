import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** A stored key: only its SHA-256 is kept (keys are 256 random bits, so a fast hash suffices). */
export interface StoredKey {
	id: string;
	name: string;
	hash: string;
	created_at: string;
	revoked_at?: string;
}

export const hashKey = (key: string) => createHash("sha256").update(key, "utf8").digest();

export function readKeys(path: string): StoredKey[] {
	if (!existsSync(path)) return [];
	return JSON.parse(readFileSync(path, "utf8")) as StoredKey[];
}

function writeKeys(path: string, keys: StoredKey[]): void {
	mkdirSync(dirname(path), { recursive: true });
	writeFileSync(`${path}.tmp`, `${JSON.stringify(keys, null, 1)}\n`, { mode: 0o600 });
	renameSync(`${path}.tmp`, path);
}

/** Creates a key, stores its hash, and returns the key itself: the only time it is ever shown. */
export function createKey(path: string, name: string): { key: string; id: string } {
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
 */
export function createKeyring(opts: { path: string; envKeys?: string[] }) {
	const envHashes = (opts.envKeys ?? []).filter(Boolean).map(hashKey);
	let fileHashes: Buffer[] = [];
	let seen = "";
	const refresh = () => {
		const stamp = existsSync(opts.path) ? `${statSync(opts.path).mtimeMs}:${statSync(opts.path).size}` : "none";
		if (stamp === seen) return;
		seen = stamp;
		fileHashes = readKeys(opts.path)
			.filter((k) => !k.revoked_at)
			.map((k) => Buffer.from(k.hash, "hex"));
	};
	return {
		verify(key: string): boolean {
			refresh();
			const h = hashKey(key);
			let ok = false;
			for (const candidate of [...envHashes, ...fileHashes]) {
				if (candidate.length === h.length && timingSafeEqual(candidate, h)) ok = true;
			}
			return ok;
		},
		count(): number {
			refresh();
			return envHashes.length + fileHashes.length;
		},
	};
}

export type Keyring = ReturnType<typeof createKeyring>;
