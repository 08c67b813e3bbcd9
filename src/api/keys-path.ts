import { join } from "node:path";

/** Where API key hashes live: --keys-file, else CHAINLAKE_KEYS_FILE, else <data-dir>/_keys.json. */
export function keysPath(dataDir: string, explicit?: string): string {
	return explicit ?? process.env.CHAINLAKE_KEYS_FILE ?? join(dataDir, "_keys.json");
}
