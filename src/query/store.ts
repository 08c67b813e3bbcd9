import { existsSync, statSync } from "node:fs";
import {
	type DuckDBConnection,
	DuckDBInstance,
	type DuckDBPreparedStatement,
	type DuckDBValue,
} from "@duckdb/node-api";
import { DATASETS, type DatasetName } from "../extract/rows.js";
import { manifestPath } from "../store/layout.js";
import { GHOST_DATASET, ghostFiles, listedFiles, type Manifest, readManifestSafe } from "../store/manifest.js";
import { SCHEMAS } from "../store/schema.js";
import { chainsIn } from "./views.js";

export type Row = Record<string, unknown>;
export type Params = Record<string, DuckDBValue>;

/** Connections kept open: DuckDB runs one query per connection at a time, and parallelises inside a query too. */
const POOL_SIZE = 4;
/** Prepared statements kept per connection (a few per route and filter combination). */
const MAX_PREPARED = 256;

export interface Store {
	/** Chains with data, as `eip155-<n>`. */
	chains(): string[];
	/** Datasets of a chain that have at least one file. */
	hasDataset(chain: string, dataset: DatasetName): boolean;
	/**
	 * Runs `sql` with bound parameters. `sql` names datasets as `{transfers}` etc.; the store
	 * replaces them with the chain's own file list. Only the store builds SQL text, and only from
	 * its own identifiers and paths: every user value arrives in `params`.
	 */
	query(chain: string, sql: string, params?: Params): Promise<Row[]>;
	/**
	 * The chain's files as of now, fixed: every query of one API request goes through one
	 * snapshot, so a reorg or compaction committed meanwhile cannot show it a mix of states.
	 */
	snapshot(chain: string): Snapshot;
	close(): void;
}

export interface Snapshot {
	chain: string;
	hasDataset(dataset: DatasetName): boolean;
	query(sql: string, params?: Params): Promise<Row[]>;
}

const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * The one module that talks to DuckDB for the API. Reads the Parquet files in place (no import
 * step): each `{dataset}` in a statement becomes `read_parquet([...])` over the files the chain's
 * manifest lists, so ranges a backfill appends are seen by the next query and a crashed run's
 * leftovers never are. Prepared statements are cached per connection (and per file list).
 */
export async function createStore(dataDir: string): Promise<Store> {
	const instance = await DuckDBInstance.create(":memory:", { threads: "2" });
	const idle: { conn: DuckDBConnection; prepared: Map<string, DuckDBPreparedStatement> }[] = [];
	for (let i = 0; i < POOL_SIZE; i++) idle.push({ conn: await instance.connect(), prepared: new Map() });
	const waiting: ((c: (typeof idle)[number]) => void)[] = [];
	const acquire = () =>
		new Promise<(typeof idle)[number]>((resolve) => {
			const c = idle.pop();
			if (c) resolve(c);
			else waiting.push(resolve);
		});
	const release = (c: (typeof idle)[number]) => {
		const next = waiting.shift();
		if (next) next(c);
		else idle.push(c);
	};

	// The manifest of each chain, re-read when it changes (a backfill appended ranges).
	const manifests = new Map<string, { stamp: string; manifest: Manifest | null }>();
	const manifestOf = (chain: string): Manifest | null => {
		const path = manifestPath(dataDir, chain);
		const stamp = existsSync(path) ? `${statSync(path).mtimeMs}:${statSync(path).size}` : "none";
		const cached = manifests.get(chain);
		if (cached?.stamp === stamp) return cached.manifest;
		const manifest = readManifestSafe(dataDir, chain);
		manifests.set(chain, { stamp, manifest });
		return manifest;
	};
	/** `{dataset}` → the files `manifest` lists, or a typed empty relation while there are none.
	 * `{ghost_blocks}` is the reorged-out blocks, with the columns of blocks. */
	const expand = (manifest: Manifest | null, sql: string) =>
		sql.replace(/\{([a-z_]+)\}/g, (whole, name: string) => {
			const ghost = name === GHOST_DATASET;
			if (!ghost && !DATASETS.includes(name as DatasetName)) return whole;
			const files = ghost ? ghostFiles(dataDir, manifest) : listedFiles(dataDir, manifest, name as DatasetName);
			if (files.length > 0) return `read_parquet([${files.map(quote).join(", ")}])`;
			const schema = SCHEMAS[ghost ? "blocks" : (name as DatasetName)] as Record<string, readonly [string, string]>;
			const columns = Object.entries(schema);
			return `(SELECT ${columns.map(([c, [type]]) => `NULL::${type} AS "${c}"`).join(", ")} WHERE false)`;
		});

	async function run(manifest: Manifest | null, sql: string, params: Params): Promise<Row[]> {
		const text = expand(manifest, sql);
		const c = await acquire();
		try {
			let stmt = c.prepared.get(text);
			if (!stmt) {
				stmt = await c.conn.prepare(text);
				c.prepared.set(text, stmt);
				// The text embeds the file list, so appended ranges retire old statements.
				if (c.prepared.size > MAX_PREPARED) {
					const [oldest, old] = c.prepared.entries().next().value as [string, DuckDBPreparedStatement];
					old.destroySync();
					c.prepared.delete(oldest);
				}
			}
			stmt.clearBindings();
			if (Object.keys(params).length > 0) stmt.bind(params);
			const reader = await stmt.runAndReadAll();
			return reader.getRowObjectsJS() as Row[];
		} finally {
			release(c);
		}
	}

	const known = (chain: string) => {
		if (!chainsIn(dataDir).includes(chain)) throw new Error(`unknown chain ${chain}`);
	};

	return {
		chains: () => chainsIn(dataDir),
		hasDataset: (chain, dataset) => listedFiles(dataDir, manifestOf(chain), dataset).length > 0,
		async query(chain, sql, params = {}) {
			known(chain);
			return run(manifestOf(chain), sql, params);
		},
		snapshot(chain) {
			known(chain);
			const manifest = manifestOf(chain);
			return {
				chain,
				hasDataset: (dataset) => listedFiles(dataDir, manifest, dataset).length > 0,
				query: (sql, params = {}) => run(manifest, sql, params),
			};
		},
		close() {
			for (const c of idle) {
				for (const s of c.prepared.values()) s.destroySync();
				c.conn.closeSync();
			}
			instance.closeSync();
		},
	};
}
