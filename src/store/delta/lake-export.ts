import { existsSync } from "node:fs";
import { rm, stat } from "node:fs/promises";
import { basename, dirname, join, relative } from "node:path";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { DATASETS } from "../../extract/rows.js";
import { INDEX_NAMES } from "../format/indexes.js";
import { partPaths } from "../format/key-parts.js";
import { partitionFileName, type RangeId } from "../format/layout.js";
import { GHOST_DATASET } from "../format/manifest.js";
import { parquetShape } from "../format/parquet-shape.js";
import type { LakeSettings, Manifest } from "../format/records.js";
import { METADATA_TABLE_NAMES, RANK_TABLES, rankTablesOf } from "../format/records.js";
import { runCovering, runsOf, SETTLE_DEPTH } from "../format/run-lookup.js";
import {
	type Action,
	type AddAction,
	apply,
	CHECKPOINT_INTERVAL,
	cleanLog,
	commitName,
	LOG_DIR,
	type MetaDataAction,
	readTable,
	removeLeftovers,
	type TableState,
	writeCheckpoint,
	writeCommit,
} from "./delta-log.js";
import { schemaString } from "./delta-types.js";
import { fileFacts } from "./file-stats.js";

/*
 * The lake as Delta Lake tables: after every manifest save, each dataset, index and metadata
 * table gets a commit that makes its Delta log list exactly the files the manifest lists (or,
 * with `final_only`, those of final blocks), so Spark, Trino, ClickHouse, DuckDB and Polars read
 * the live snapshot, never a replaced file a folder glob would also pick up.
 *
 * - Appends are `add`s; a reorg is `remove` + `add` in one commit; a compaction or a merge (the
 *   same blocks, the same last block hash, the same rows) is `remove` + `add` with
 *   `dataChange: false`.
 * - Each commit carries a `txn` (appId "chainlake") with the manifest generation it reflects.
 *   The export compares states, not events: after a crash the next save (or writer start)
 *   commits whatever is missing, and a table that did not change at a generation gets no commit
 *   (its state as of generation G is its last commit with txn version <= G).
 * - Removed files stay on disk for `retention_minutes` (an engine that planned on version N
 *   reads them minutes later), then the vacuum deletes them and records it in a commit.
 * - A file to add that is missing or not whole Parquet (damaged, and listed again by a restored
 *   manifest) cannot be described: its table gets no commit until a repair lists a sound file
 *   in its place. The table's log stays at its last state, whose files are all kept on disk, so
 *   engines read the last sound snapshot; the export never reads the damaged file, and never
 *   fails a writer's start on it (the writer's own check names it and fetches it again).
 */

export const DEFAULT_LAKE: LakeSettings = { delta: true, retention_minutes: 360, final_only: false };
/** The API's own readers need a replaced file for this long (retire-later.ts): the floor. */
export const MIN_RETENTION_MINUTES = 1;

export const lakeSettings = (m: Manifest): LakeSettings => ({ ...DEFAULT_LAKE, ...m.lake });

/** Every table that may have a log: datasets, ghosts, indexes, token metadata, holder ranks (a function: modules import each other in a cycle). */
export const lakeTables = (): readonly string[] => [
	...DATASETS,
	GHOST_DATASET,
	...INDEX_NAMES,
	...METADATA_TABLE_NAMES,
	...RANK_TABLES,
];

export const APP_ID = "chainlake";

interface LiveFile {
	range: RangeId;
}

/** The files each table should list now: the manifest's (see the module comment for `final_only`). */
export function liveFiles(m: Manifest, settings: LakeSettings): Map<string, Map<string, LiveFile>> {
	const out = new Map<string, Map<string, LiveFile>>();
	// An index file in key-range parts (format/key-parts.ts) is one Delta file per part.
	const put = (table: string, range: RangeId, parts = 1) => {
		const files = out.get(table) ?? new Map<string, LiveFile>();
		out.set(table, files);
		for (const name of partPaths(partitionFileName(table, range), parts)) files.set(name, { range });
	};
	const sorted = [...m.chunks].sort((a, b) => a.from - b.from);
	const tip = sorted.at(-1)?.to ?? -1;
	const finalThrough = m.final_through ?? tip - SETTLE_DEPTH;
	const chunks = settings.final_only ? sorted.filter((c) => c.to <= finalThrough) : sorted;
	for (const c of chunks) for (const d of c.datasets) put(d, c);
	for (const index of INDEX_NAMES) {
		// As the API reads an index: its runs, and the own files of chunks no run covers.
		for (const r of runsOf(m, index)) put(index, r, r.parts);
		for (const c of chunks)
			if (c.indexes?.includes(index) && !runCovering(m, index, c)) put(index, c, c.parts?.[index]);
	}
	for (const g of m.ghosts ?? []) put(GHOST_DATASET, g);
	for (const e of m.metadata ?? []) for (const t of METADATA_TABLE_NAMES) put(t, e);
	// (Head ranks stand at a block near the head, not final: none with `final_only`.)
	for (const r of m.ranks ?? [])
		if (!(settings.final_only && r.tokens !== undefined)) for (const [t, parts] of rankTablesOf(r)) put(t, r, parts);
	return out;
}

/** One process's DuckDB for reading footers and writing checkpoints (small, one thread). */
let shared: Promise<DuckDBConnection> | null = null;
const connection = () => {
	shared ??= DuckDBInstance.create(":memory:", { threads: "1" }).then((i) => i.connect());
	return shared;
};

/** A file the manifest lists that its table's log cannot take yet (see the module comment). */
export interface WaitingFile {
	/** Relative to the data folder. */
	file: string;
	problem: string;
}

export interface LakeExporter {
	/**
	 * Brings every table's log to the manifest's state; vacuums what is due. Returns the files
	 * that hold a table back at its last state (damaged ones), [] when every table is current.
	 */
	export(m: Manifest, now?: number): Promise<WaitingFile[]>;
	/** Whether a file must stay on disk for the Delta logs (live, or removed within the retention). */
	retains(path: string): boolean;
}

const exporters = new Map<string, LakeExporter>();

/** The exporter of a chain's folder (one per process: it caches each table's state). */
export function lakeExporter(chainDir: string): LakeExporter {
	const e = exporters.get(chainDir) ?? createExporter(chainDir);
	exporters.set(chainDir, e);
	return e;
}

function createExporter(chainDir: string): LakeExporter {
	const states = new Map<string, TableState>();
	let enabled = false;

	/** A table's state, from the cache unless another process or a test changed the log meanwhile. */
	async function stateOf(conn: DuckDBConnection, table: string): Promise<TableState> {
		const dir = join(chainDir, table);
		const cached = states.get(table);
		const log = join(dir, LOG_DIR);
		const fresh =
			cached !== undefined &&
			(cached.version < 0 ? !existsSync(log) : existsSync(join(log, commitName(cached.version)))) &&
			!existsSync(join(log, commitName(cached.version + 1)));
		if (fresh) return cached;
		// Read from disk: first in this process, or after another writer. A crash of the last
		// writer may have left temporary files in the log; only the lock holder exports.
		await removeLeftovers(dir);
		const read = await readTable(conn, dir);
		states.set(table, read);
		return read;
	}

	async function commit(conn: DuckDBConnection, table: string, state: TableState, actions: Action[]) {
		const dir = join(chainDir, table);
		if (!(await writeCommit(dir, state.version + 1, actions)))
			throw new Error(`${join(dir, LOG_DIR)}: commit ${state.version + 1} exists (another writer?)`);
		apply(state, actions);
		state.version++;
		if (state.version > 0 && state.version % CHECKPOINT_INTERVAL === 0) {
			await writeCheckpoint(conn, dir, state);
			await cleanLog(dir, state, retentionMs);
		}
	}
	/** The retention of the export under way (set by `export`, read by the commits it makes). */
	let retentionMs = DEFAULT_LAKE.retention_minutes * 60_000;

	async function exportTable(
		conn: DuckDBConnection,
		m: Manifest,
		settings: LakeSettings,
		table: string,
		want: Map<string, LiveFile>,
		now: number,
		waiting: WaitingFile[],
	) {
		const dir = join(chainDir, table);
		const state = await stateOf(conn, table);
		if (state.version < 0 && want.size === 0) return;
		const removed = [...state.adds.values()].filter((a) => !want.has(a.path));
		const addedNames = [...want.keys()].filter((p) => !state.adds.has(p));
		const configuration = {
			"delta.deletedFileRetentionDuration": `interval ${settings.retention_minutes} minutes`,
			"delta.logRetentionDuration": `interval ${settings.retention_minutes} minutes`,
			"delta.checkpointInterval": String(CHECKPOINT_INTERVAL),
		};
		const added: AddAction[] = [];
		let columns: { name: string; type: string }[] | null = null;
		for (const name of addedNames) {
			const path = join(dir, name);
			const unreadable = (problem: string) => waiting.push({ file: relative(dirname(chainDir), path), problem });
			// Checked before DuckDB reads its footer: a damaged file holds the table back, it fails nothing.
			const shape = await parquetShape(path);
			if (shape) unreadable(shape);
			const facts = shape ? null : await fileFacts(conn, path).catch(() => null);
			if (!shape && !facts) unreadable("its Parquet footer cannot be read");
			if (!facts) continue;
			const st = await stat(path);
			const range = (want.get(name) as LiveFile).range;
			columns ??= facts.columns;
			added.push({
				path: encodeURIComponent(name),
				partitionValues: {},
				size: st.size,
				modificationTime: Math.floor(st.mtimeMs),
				dataChange: true,
				stats: facts.stats,
				tags: { from: String(range.from), to: String(range.to), last_hash: range.last_hash },
			});
		}
		if (added.length < addedNames.length) return;
		const schema = columns ? schemaString(columns) : null;
		const meta = state.metaData;
		const metaChanged =
			meta === null ||
			(schema !== null && schema !== meta.schemaString) ||
			JSON.stringify(meta.configuration) !== JSON.stringify(configuration);
		if (removed.length === 0 && added.length === 0 && !metaChanged) return;
		if (meta === null && schema === null) return; // nothing ever added: no table yet
		const dataChange = !sameData(removed, added);
		const actions: Action[] = [
			{
				commitInfo: {
					timestamp: now,
					operation: removed.length === 0 ? "WRITE" : dataChange ? "MERGE" : "OPTIMIZE",
					operationParameters: { generation: m.generation ?? 0 },
					engineInfo: "chainlake",
					isBlindAppend: removed.length === 0,
				},
			},
		];
		if (state.version < 0) actions.push({ protocol: { minReaderVersion: 1, minWriterVersion: 2 } });
		if (metaChanged) {
			const metaData: MetaDataAction = {
				id: meta?.id ?? crypto.randomUUID(),
				name: table,
				description: `chainlake ${m.chain} ${table}`,
				format: { provider: "parquet", options: {} },
				schemaString: schema ?? (meta as MetaDataAction).schemaString,
				partitionColumns: [],
				configuration,
				createdTime: meta?.createdTime ?? now,
			};
			actions.push({ metaData });
		}
		actions.push({ txn: { appId: APP_ID, version: m.generation ?? 0, lastUpdated: now } });
		for (const r of removed)
			actions.push({
				remove: {
					path: r.path,
					deletionTimestamp: now,
					dataChange,
					extendedFileMetadata: true,
					partitionValues: {},
					size: r.size,
				},
			});
		for (const a of added) actions.push({ add: { ...a, dataChange } });
		await commit(conn, table, state, actions);
	}

	/**
	 * Deletes files removed longer ago than the retention (Delta's VACUUM), recorded first: a
	 * crash after the record deletes them at the next export (and records it again).
	 */
	async function vacuum(conn: DuckDBConnection, m: Manifest, table: string, retentionMs: number, now: number) {
		const state = states.get(table);
		if (!state || state.version < 0) return;
		const due = [...state.removes.values()]
			.filter((r) => now - r.deletionTimestamp >= retentionMs)
			.map((r) => ({ r, path: join(chainDir, table, decodeURIComponent(r.path)) }))
			.filter(({ path }) => existsSync(path));
		if (due.length > 0)
			await commit(conn, table, state, [
				{
					commitInfo: {
						timestamp: now,
						operation: "VACUUM END",
						operationParameters: { status: "COMPLETED", generation: m.generation ?? 0 },
						operationMetrics: { numDeletedFiles: String(due.length), numVacuumedDirectories: "0" },
						engineInfo: "chainlake",
					},
				},
			]);
		for (const { path } of due) await rm(path, { force: true });
		// Expired tombstones leave the state (and so the next checkpoint), deleted or not.
		for (const r of [...state.removes.values()])
			if (now - r.deletionTimestamp >= retentionMs) state.removes.delete(r.path);
	}

	return {
		async export(m, now = Date.now()) {
			const settings = lakeSettings(m);
			enabled = settings.delta;
			if (!settings.delta) {
				// Turned off: a stale log would tell engines of files that are gone.
				for (const t of lakeTables()) await rm(join(chainDir, t, LOG_DIR), { recursive: true, force: true });
				states.clear();
				return [];
			}
			const conn = await connection();
			retentionMs = Math.max(MIN_RETENTION_MINUTES, settings.retention_minutes) * 60_000;
			const live = liveFiles(m, settings);
			const waiting: WaitingFile[] = [];
			for (const table of lakeTables()) {
				await exportTable(conn, m, settings, table, live.get(table) ?? new Map(), now, waiting);
				await vacuum(conn, m, table, retentionMs, now);
			}
			return waiting;
		},
		retains(path) {
			if (!enabled) return false;
			const state = states.get(basename(dirname(path)));
			const name = encodeURIComponent(basename(path));
			return state !== undefined && (state.adds.has(name) || state.removes.has(name));
		},
	};
}

/**
 * Whether a commit only rewrites data (a compaction or a merge): the removed and the added files
 * cover the same contiguous blocks, end at the same block hash (so no block in them changed:
 * each hash commits to its parents) and hold the same rows.
 */
function sameData(removed: readonly AddAction[], added: readonly AddAction[]): boolean {
	if (removed.length === 0 || added.length === 0) return false;
	const span = (files: readonly AddAction[]) => {
		const ranges = files.map((f) => ({ from: Number(f.tags.from), to: Number(f.tags.to), hash: f.tags.last_hash }));
		if (ranges.some((r) => !Number.isFinite(r.from) || !Number.isFinite(r.to) || r.hash == null)) return null;
		ranges.sort((a, b) => a.from - b.from);
		for (let i = 1; i < ranges.length; i++)
			if ((ranges[i] as { from: number }).from !== (ranges[i - 1] as { to: number }).to + 1) return null;
		const last = ranges.at(-1) as { to: number; hash: string };
		const rows = files.reduce((n, f) => n + Number((JSON.parse(f.stats) as { numRecords: number }).numRecords), 0);
		return `${ranges[0]?.from}-${last.to}-${last.hash}-${rows}`;
	};
	const a = span(removed);
	return a !== null && a === span(added);
}
