import { existsSync } from "node:fs";
import { link, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";
import { crashPoint } from "../../util/crash-point.js";
import { fsyncDir, fsyncFile } from "../../util/fsync.js";
import { sqlString as quote } from "../../util/sql-string.js";
import { removingOnFailure } from "../../util/temp-files.js";

/*
 * A Delta Lake transaction log (delta-io/delta PROTOCOL.md), written and read by this process
 * alone (the chain's write lock): numbered commits of newline-delimited JSON actions in
 * `<table>/_delta_log/`, each created exclusively (never overwritten), with a Parquet checkpoint
 * of the whole state every CHECKPOINT_INTERVAL versions so a reader (and our own start-up)
 * replays at most that many commits.
 */

export interface AddAction {
	path: string;
	partitionValues: Record<string, string>;
	size: number;
	modificationTime: number;
	dataChange: boolean;
	stats: string;
	/** Where the file came from: `from`, `to`, `last_hash` of its block range (see the exporter). */
	tags: Record<string, string>;
}

export interface RemoveAction {
	path: string;
	deletionTimestamp: number;
	dataChange: boolean;
	extendedFileMetadata: boolean;
	partitionValues: Record<string, string>;
	size: number;
}

export interface MetaDataAction {
	id: string;
	name: string | null;
	description: string | null;
	format: { provider: "parquet"; options: Record<string, string> };
	schemaString: string;
	partitionColumns: string[];
	configuration: Record<string, string>;
	createdTime: number;
}

export interface ProtocolAction {
	minReaderVersion: number;
	minWriterVersion: number;
}

export interface TxnAction {
	appId: string;
	version: number;
	lastUpdated: number;
}

export type Action =
	| { commitInfo: Record<string, unknown> }
	| { protocol: ProtocolAction }
	| { metaData: MetaDataAction }
	| { txn: TxnAction }
	| { add: AddAction }
	| { remove: RemoveAction };

/** A table's state at its latest version: what a reader reconstructs by replaying the log. */
export interface TableState {
	/** -1: no commit yet. */
	version: number;
	protocol: ProtocolAction | null;
	metaData: MetaDataAction | null;
	/** txn versions by appId. */
	txns: Map<string, TxnAction>;
	/** Live files by path. */
	adds: Map<string, AddAction>;
	/** Tombstones by path: removed files, still on disk until vacuumed. */
	removes: Map<string, RemoveAction>;
	/** The version of the newest checkpoint, or -1. */
	checkpoint: number;
}

export const CHECKPOINT_INTERVAL = 10;
export const LOG_DIR = "_delta_log";

const pad = (v: number) => v.toString().padStart(20, "0");
export const commitName = (v: number) => `${pad(v)}.json`;
export const checkpointName = (v: number) => `${pad(v)}.checkpoint.parquet`;
const COMMIT = /^(\d{20})\.json$/;
const CHECKPOINT = /^(\d{20})\.checkpoint\.parquet$/;

export const emptyState = (): TableState => ({
	version: -1,
	protocol: null,
	metaData: null,
	txns: new Map(),
	adds: new Map(),
	removes: new Map(),
	checkpoint: -1,
});

/** Applies one commit's actions to a state (PROTOCOL.md "Action Reconciliation"). */
export function apply(state: TableState, actions: readonly Action[]): void {
	for (const a of actions) {
		if ("protocol" in a) state.protocol = a.protocol;
		else if ("metaData" in a) state.metaData = a.metaData;
		else if ("txn" in a) state.txns.set(a.txn.appId, a.txn);
		else if ("add" in a) {
			state.adds.set(a.add.path, a.add);
			state.removes.delete(a.add.path);
		} else if ("remove" in a) {
			state.adds.delete(a.remove.path);
			state.removes.set(a.remove.path, a.remove);
		}
	}
}

/** Replays a table's log from its last checkpoint (or from version 0). */
export async function readTable(conn: DuckDBConnection, tableDir: string): Promise<TableState> {
	const dir = join(tableDir, LOG_DIR);
	const state = emptyState();
	let names: string[];
	try {
		names = await readdir(dir);
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT") return state;
		throw err;
	}
	const checkpoints = names.flatMap((n) => (CHECKPOINT.test(n) ? [Number(CHECKPOINT.exec(n)?.[1])] : []));
	const commits = names.flatMap((n) => (COMMIT.test(n) ? [Number(COMMIT.exec(n)?.[1])] : [])).sort((a, b) => a - b);
	// The newest checkpoint `_last_checkpoint` names (it is written after the checkpoint file, so
	// a crash between leaves the previous one named, which is whole).
	const last = await readFile(join(dir, "_last_checkpoint"), "utf8")
		.then((t) => Number((JSON.parse(t) as { version: number }).version))
		.catch(() => -1);
	const from = checkpoints.includes(last) ? last : -1;
	if (from >= 0) {
		apply(state, await readCheckpoint(conn, join(dir, checkpointName(from))));
		state.version = from;
		state.checkpoint = from;
	}
	for (const v of commits) {
		if (v <= from) continue;
		if (v !== state.version + 1) throw new Error(`${dir}: commit ${v} follows ${state.version} (a gap in the log)`);
		const text = await readFile(join(dir, commitName(v)), "utf8");
		apply(
			state,
			text
				.split("\n")
				.filter((l) => l.trim() !== "")
				.map((l) => JSON.parse(l) as Action),
		);
		state.version = v;
	}
	return state;
}

/**
 * Writes commit `version` if no commit of that number exists: the whole text goes to a hidden
 * temporary file first, then a hard link gives it its name, which fails if the name is taken
 * (PROTOCOL.md requires mutual exclusion: a commit is never overwritten). Returns false then.
 */
export async function writeCommit(tableDir: string, version: number, actions: readonly Action[]): Promise<boolean> {
	const dir = join(tableDir, LOG_DIR);
	await mkdir(dir, { recursive: true });
	const tmp = join(dir, `.${commitName(version)}.${process.pid}.tmp`);
	await removingOnFailure([tmp], async () => {
		await writeFile(tmp, `${actions.map((a) => JSON.stringify(a)).join("\n")}\n`);
		await fsyncFile(tmp);
	});
	try {
		await link(tmp, join(dir, commitName(version)));
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
		throw err;
	} finally {
		await rm(tmp, { force: true });
	}
	await fsyncDir(dir);
	crashPoint("delta.committed");
	return true;
}

const MAP = "MAP(VARCHAR, VARCHAR)";
/** The checkpoint's columns: one action per row, in the column of its kind (PROTOCOL.md "Checkpoint Schema"). */
const CHECKPOINT_COLUMNS: Record<string, string> = {
	txn: "STRUCT(appId VARCHAR, version BIGINT, lastUpdated BIGINT)",
	add: `STRUCT(path VARCHAR, partitionValues ${MAP}, size BIGINT, modificationTime BIGINT, dataChange BOOLEAN, stats VARCHAR, tags ${MAP})`,
	remove: `STRUCT(path VARCHAR, deletionTimestamp BIGINT, dataChange BOOLEAN, extendedFileMetadata BOOLEAN, partitionValues ${MAP}, size BIGINT)`,
	metaData: `STRUCT(id VARCHAR, "name" VARCHAR, description VARCHAR, format STRUCT(provider VARCHAR, options ${MAP}), schemaString VARCHAR, partitionColumns VARCHAR[], configuration ${MAP}, createdTime BIGINT)`,
	protocol: "STRUCT(minReaderVersion INTEGER, minWriterVersion INTEGER)",
};

/**
 * Writes the checkpoint of `state` (at its version) and points `_last_checkpoint` at it. The
 * checkpoint goes to a temporary name first, so a crash never leaves a partial one under its
 * name; `_last_checkpoint` is replaced by a rename (the protocol lets it be overwritten).
 */
export async function writeCheckpoint(conn: DuckDBConnection, tableDir: string, state: TableState): Promise<void> {
	const dir = join(tableDir, LOG_DIR);
	const actions: Action[] = [];
	if (state.protocol) actions.push({ protocol: state.protocol });
	if (state.metaData) actions.push({ metaData: state.metaData });
	for (const txn of state.txns.values()) actions.push({ txn });
	for (const add of state.adds.values()) actions.push({ add });
	for (const remove of state.removes.values()) actions.push({ remove });
	const staged = join(dir, `.${checkpointName(state.version)}.ndjson`);
	const tmp = join(dir, `.${checkpointName(state.version)}.tmp`);
	const lastTmp = join(dir, "._last_checkpoint.tmp");
	await removingOnFailure([staged, tmp, lastTmp], async () => {
		await writeFile(staged, `${actions.map((a) => JSON.stringify(a)).join("\n")}\n`);
		const typed = Object.entries(CHECKPOINT_COLUMNS).map(([c, t]) => `${c}: ${quote(t)}`);
		await conn.run(
			`COPY (SELECT ${Object.keys(CHECKPOINT_COLUMNS).join(", ")} FROM read_json(${quote(staged)}, format = 'newline_delimited', columns = {${typed.join(", ")}}))
		 TO ${quote(tmp)} (FORMAT parquet, COMPRESSION 'zstd')`,
		);
		await rm(staged, { force: true });
		await fsyncFile(tmp);
		await rename(tmp, join(dir, checkpointName(state.version)));
		await writeFile(lastTmp, `${JSON.stringify({ version: state.version, size: actions.length })}\n`);
		await fsyncFile(lastTmp);
		await rename(lastTmp, join(dir, "_last_checkpoint"));
		await fsyncDir(dir);
	});
	state.checkpoint = state.version;
}

async function readCheckpoint(conn: DuckDBConnection, path: string): Promise<Action[]> {
	const read = await conn.runAndReadAll(
		`SELECT to_json(protocol)::VARCHAR AS protocol, to_json(metaData)::VARCHAR AS "metaData", to_json(txn)::VARCHAR AS txn,
		        to_json("add")::VARCHAR AS "add", to_json(remove)::VARCHAR AS remove
		 FROM read_parquet(${quote(path)})`,
	);
	const out: Action[] = [];
	for (const row of read.getRowObjectsJS()) {
		for (const [kind, text] of Object.entries(row)) {
			if (text == null) continue;
			out.push({ [kind]: JSON.parse(String(text)) } as unknown as Action);
		}
	}
	// Protocol and metadata before the files, as replay expects.
	const rank = (a: Action) => ("protocol" in a || "metaData" in a ? 0 : 1);
	return out.sort((a, b) => rank(a) - rank(b));
}

/**
 * Deletes what no reader needs any more: commits and checkpoints older than the newest
 * checkpoint that have also been around longer than `keepMs` (a reader that listed the log a
 * moment ago may still be reading them), and temporary files a crash left.
 */
export async function cleanLog(tableDir: string, state: TableState, keepMs: number, now = Date.now()): Promise<void> {
	const dir = join(tableDir, LOG_DIR);
	let names: string[];
	try {
		names = await readdir(dir);
	} catch {
		return;
	}
	for (const n of names) {
		const v = Number(COMMIT.exec(n)?.[1] ?? CHECKPOINT.exec(n)?.[1] ?? Number.NaN);
		const old = Number.isFinite(v) && v < state.checkpoint;
		const leftover = isLeftover(n);
		if (!old && !leftover) continue;
		const at = await stat(join(dir, n)).then(
			(s) => s.mtimeMs,
			() => now,
		);
		if (old && now - at < keepMs) continue;
		await rm(join(dir, n), { force: true });
	}
}

/** A hidden temporary file of a commit or checkpoint being written (a crash may leave one). */
const isLeftover = (name: string) => name.startsWith(".") && (name.endsWith(".tmp") || name.endsWith(".ndjson"));

/** Deletes the temporary files a crashed writer left in a table's log (the lock holder's start). */
export async function removeLeftovers(tableDir: string): Promise<void> {
	const dir = join(tableDir, LOG_DIR);
	const names = await readdir(dir).catch(() => [] as string[]);
	for (const n of names) if (isLeftover(n)) await rm(join(dir, n), { force: true });
}

/** Whether a table has a log at all. */
export const hasLog = (tableDir: string) => existsSync(join(tableDir, LOG_DIR));
