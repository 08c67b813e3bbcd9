import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import {
	type DuckDBConnection,
	DuckDBInstance,
	type DuckDBPreparedStatement,
	type DuckDBValue,
} from "@duckdb/node-api";
import { DATASETS, type DatasetName } from "../extract/rows.js";
import { datasetDir } from "../store/layout.js";
import { chainsIn } from "./views.js";

export type Row = Record<string, unknown>;
export type Params = Record<string, DuckDBValue>;

/** Connections kept open: DuckDB runs one query per connection at a time, and parallelises inside a query too. */
const POOL_SIZE = 4;

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
	close(): void;
}

const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * The one module that talks to DuckDB for the API. Reads the Parquet files in place (no import
 * step): each `{dataset}` in a statement becomes `read_parquet('<data>/<chain>/<dataset>/*.parquet')`,
 * so files appended by a backfill are seen by the next query. Prepared statements are cached
 * per connection.
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

	const hasDataset = (chain: string, dataset: DatasetName) => {
		const dir = datasetDir(dataDir, chain, dataset);
		return existsSync(dir) && readdirSync(dir).some((f) => f.endsWith(".parquet"));
	};

	const expand = (chain: string, sql: string) =>
		sql.replace(/\{([a-z_]+)\}/g, (whole, name: string) => {
			if (!DATASETS.includes(name as DatasetName)) return whole;
			return `read_parquet(${quote(join(datasetDir(dataDir, chain, name as DatasetName), "*.parquet"))})`;
		});

	return {
		chains: () => chainsIn(dataDir),
		hasDataset,
		async query(chain, sql, params = {}) {
			if (!chainsIn(dataDir).includes(chain)) throw new Error(`unknown chain ${chain}`);
			const text = expand(chain, sql);
			const c = await acquire();
			try {
				let stmt = c.prepared.get(text);
				if (!stmt) {
					stmt = await c.conn.prepare(text);
					c.prepared.set(text, stmt);
				}
				stmt.clearBindings();
				if (Object.keys(params).length > 0) stmt.bind(params);
				const reader = await stmt.runAndReadAll();
				return reader.getRowObjectsJS() as Row[];
			} finally {
				release(c);
			}
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
