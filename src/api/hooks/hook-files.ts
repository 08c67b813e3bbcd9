import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chainDir } from "../../store/format/layout.js";
import { fsyncDir, fsyncFile } from "../../util/fsync.js";
import { removingOnFailure } from "../../util/temp-files.js";

/*
 * Webhooks on disk, in the lake folder: `<data>/<chain>/_hooks/<id>.json` is a hook as its key
 * made it (written by the API process that answered, replaced by a replay, removed by DELETE),
 * `<id>.state.json` its delivery state (written only by the one process that delivers the chain's
 * hooks, hook-delivery.ts, which holds `_hooks/_lock`). Two files, so no file has two writers
 * across processes. Each is replaced whole (temp + fsync + rename + fsync of the folder): a crash,
 * even SIGKILL, leaves the old version or the new one, never half of one.
 */

/** A hook as its key made it. The secret stays on disk (it signs every delivery); it is never answered. */
export interface HookDef {
	id: string;
	chain: string;
	/** SHA-256 (hex) of the API key that made it: only that key sees, replays or deletes it. */
	owner: string;
	/** The list route's path without the query (no base path), e.g. /eip155-1/v1/address/0x.../transfers. */
	path: string;
	query: Record<string, string>;
	url: string;
	secret: string;
	confirmations: number;
	/** Where deliveries (re)start: the query's own start when null. */
	from_block: number | null;
	created_at: string;
	/** Bumped by each replay: the deliverer starts over when its state's generation differs. */
	generation: number;
	replayed_at: string | null;
}

export type HookStatus = "active" | "failing" | "completed" | "paused";

/** Where a hook's deliveries are, written by the delivering process after every attempt. */
export interface HookState {
	generation: number;
	status: HookStatus;
	/** The feed cursor after the last acknowledged (2xx) batch; null: from the start. */
	cursor: string | null;
	last_delivered_block: number | null;
	last_delivered_at: string | null;
	delivered_events: number;
	/** Failed attempts at the batch now pending (0 when the last attempt succeeded). */
	attempts: number;
	last_error: string | null;
	last_error_at: string | null;
	failing_since: string | null;
	next_attempt_at: string | null;
	updated_at: string;
}

export const hooksDir = (dataDir: string, chain: string) => join(chainDir(dataDir, chain), "_hooks");
const defPath = (dataDir: string, chain: string, id: string) => join(hooksDir(dataDir, chain), `${id}.json`);
const statePath = (dataDir: string, chain: string, id: string) => join(hooksDir(dataDir, chain), `${id}.state.json`);

export const HOOK_ID = /^[0-9a-f]{16}$/;
export const newHookId = () => randomBytes(8).toString("hex");

/**
 * Replaces `path` with `text`, durably. The temporary name is per write (several API processes,
 * and several requests of one, may write the same hook at once: a shared name let one request
 * rename another's file away and fail). `stillWanted`, when given, runs right before the rename,
 * synchronously (no other request of this process runs in between): false drops the write.
 */
async function writeDurably(path: string, text: string, stillWanted?: () => boolean): Promise<boolean> {
	const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
	const written = await removingOnFailure([tmp], async () => {
		writeFileSync(tmp, text, { mode: 0o600 });
		await fsyncFile(tmp);
		if (stillWanted && !stillWanted()) {
			rmSync(tmp, { force: true });
			return false;
		}
		renameSync(tmp, path);
		return true;
	});
	if (written) await fsyncDir(join(path, ".."));
	return written;
}

/**
 * The file's JSON, or null when it is missing (deleted meanwhile: a whole file is always renamed
 * into place, so a file that is there reads whole). Any other failure throws: a read refused for
 * a moment (EMFILE with many sockets open, EIO) must not pass for a deleted hook, whose state the
 * deliverer would remove, losing its cursor.
 */
function readJson<T>(path: string): T | null {
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
		throw err;
	}
	return JSON.parse(text) as T;
}

/** Writes a new hook; `stillWanted` (see writeDurably) may drop it at the last moment (false then). */
export async function writeHook(dataDir: string, def: HookDef, stillWanted?: () => boolean): Promise<boolean> {
	mkdirSync(hooksDir(dataDir, def.chain), { recursive: true, mode: 0o700 });
	return writeDurably(defPath(dataDir, def.chain, def.id), `${JSON.stringify(def, null, 1)}\n`, stillWanted);
}

/**
 * Replaces a hook (a replay) only if it is still there at `def.generation - 1`: "gone" when it was
 * deleted meanwhile (a replay must not bring back a hook a DELETE answered 204 for), "changed"
 * when another replay came first (the caller reads it again and retries).
 */
export async function replaceHook(dataDir: string, def: HookDef): Promise<"replaced" | "gone" | "changed"> {
	let outcome: "gone" | "changed" = "gone";
	const stillWanted = () => {
		const now = readHook(dataDir, def.chain, def.id);
		outcome = now ? "changed" : "gone";
		return now !== null && now.generation === def.generation - 1;
	};
	const text = `${JSON.stringify(def, null, 1)}\n`;
	return (await writeDurably(defPath(dataDir, def.chain, def.id), text, stillWanted)) ? "replaced" : outcome;
}

export const readHook = (dataDir: string, chain: string, id: string) =>
	HOOK_ID.test(id) ? readJson<HookDef>(defPath(dataDir, chain, id)) : null;

/**
 * Every hook of the chain (any owner), oldest first. A hook file that cannot be read now is left
 * out, its id added to `unreadable` (the deliverer keeps its worker and state: it is not deleted).
 */
export function listHooks(dataDir: string, chain: string, unreadable?: Set<string>): HookDef[] {
	let names: string[];
	try {
		names = readdirSync(hooksDir(dataDir, chain));
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
		throw err;
	}
	const defs: HookDef[] = [];
	for (const id of names.map((n) => /^([0-9a-f]{16})\.json$/.exec(n)?.[1])) {
		if (!id) continue;
		try {
			const def = readHook(dataDir, chain, id);
			if (def) defs.push(def);
		} catch {
			unreadable?.add(id);
		}
	}
	return defs.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

/** Removes the hook; its state goes with it (the deliverer also removes a state whose hook is gone). */
export async function removeHook(dataDir: string, chain: string, id: string): Promise<void> {
	rmSync(defPath(dataDir, chain, id), { force: true });
	rmSync(statePath(dataDir, chain, id), { force: true });
	await fsyncDir(hooksDir(dataDir, chain));
}

export const readState = (dataDir: string, chain: string, id: string) =>
	readJson<HookState>(statePath(dataDir, chain, id));

export const writeState = async (dataDir: string, chain: string, id: string, state: HookState) => {
	await writeDurably(statePath(dataDir, chain, id), `${JSON.stringify(state)}\n`);
};

export const removeState = (dataDir: string, chain: string, id: string) =>
	rmSync(statePath(dataDir, chain, id), { force: true });

/** A new hook's (or a replayed one's) state: nothing delivered yet. */
export function freshState(def: HookDef): HookState {
	return {
		generation: def.generation,
		status: "active",
		cursor: null,
		last_delivered_block: null,
		last_delivered_at: null,
		delivered_events: 0,
		attempts: 0,
		last_error: null,
		last_error_at: null,
		failing_since: null,
		next_attempt_at: null,
		updated_at: new Date().toISOString(),
	};
}
