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

/** Replaces `path` with `text`, durably: the temporary name is per process (several API processes may write hooks). */
async function writeDurably(path: string, text: string): Promise<void> {
	const tmp = `${path}.${process.pid}.tmp`;
	await removingOnFailure([tmp], async () => {
		writeFileSync(tmp, text, { mode: 0o600 });
		await fsyncFile(tmp);
		renameSync(tmp, path);
	});
	await fsyncDir(join(path, ".."));
}

function readJson<T>(path: string): T | null {
	try {
		return JSON.parse(readFileSync(path, "utf8")) as T;
	} catch {
		// Missing (deleted meanwhile) or unreadable: a whole file is always renamed into place, so
		// this is a hook deleted between listing and reading.
		return null;
	}
}

export async function writeHook(dataDir: string, def: HookDef): Promise<void> {
	mkdirSync(hooksDir(dataDir, def.chain), { recursive: true, mode: 0o700 });
	await writeDurably(defPath(dataDir, def.chain, def.id), `${JSON.stringify(def, null, 1)}\n`);
}

export const readHook = (dataDir: string, chain: string, id: string) =>
	HOOK_ID.test(id) ? readJson<HookDef>(defPath(dataDir, chain, id)) : null;

/** Every hook of the chain (any owner), oldest first. */
export function listHooks(dataDir: string, chain: string): HookDef[] {
	let names: string[];
	try {
		names = readdirSync(hooksDir(dataDir, chain));
	} catch {
		return [];
	}
	return names
		.map((n) => /^([0-9a-f]{16})\.json$/.exec(n)?.[1])
		.flatMap((id) => (id ? [readHook(dataDir, chain, id)] : []))
		.filter((d): d is HookDef => d !== null)
		.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

/** Removes the hook; its state goes with it (the deliverer also removes a state whose hook is gone). */
export async function removeHook(dataDir: string, chain: string, id: string): Promise<void> {
	rmSync(defPath(dataDir, chain, id), { force: true });
	rmSync(statePath(dataDir, chain, id), { force: true });
	await fsyncDir(hooksDir(dataDir, chain));
}

export const readState = (dataDir: string, chain: string, id: string) =>
	readJson<HookState>(statePath(dataDir, chain, id));

export const writeState = (dataDir: string, chain: string, id: string, state: HookState) =>
	writeDurably(statePath(dataDir, chain, id), `${JSON.stringify(state)}\n`);

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
