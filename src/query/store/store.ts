/**
 * What a store and its snapshots promise the rest of the API (query modules, routes, scripts),
 * apart from how createStore (create-store.ts) keeps them: the types alone, so that a module
 * that only reads through a snapshot imports no DuckDB, pool or file checks.
 */
import type { DuckDBValue } from "@duckdb/node-api";
import type { DatasetName } from "../../extract/rows.js";
import type { IndexName } from "../../store/format/indexes.js";
import type { ChunkEntry, Manifest, RankEntry } from "../../store/format/records.js";
import type { HeadRanks } from "../../store/holdings/head-ranks.js";
import type { DamagedFile } from "../damaged-data-error.js";

export type Row = Record<string, unknown>;
export type Params = Record<string, DuckDBValue>;
/** A block's hash and timestamp (Snapshot.blockStamps). */
export interface BlockStamp {
	hash: string;
	timestamp: bigint;
}

/**
 * A file of an index and a key's rows in it, as its key filter tells: none (the filter rules
 * the key out), "few" (not busy: a row group or two), or the count of a busy key, with the block
 * of every MARK_ROWS-th of its rows and of its last (store/indexes/key-filter.ts BusyKey).
 */
export interface KeySpan {
	from: number;
	to: number;
	rows: number | "few";
	marks?: ArrayLike<number>;
}

/** A chain's files' generation and final block (Store.state). */
export type ChainState = { generation: number; final: number | null };

export interface Store {
	/** Chains with data, as `eip155-<n>` (a listing of the data folder at most a second old). */
	chains(): string[];
	/** Whether `chain` has data here (looked for again at once when the listing lacks it). */
	serves(chain: string): boolean;
	/** Datasets of a chain that have at least one file. */
	hasDataset(chain: string, dataset: DatasetName): boolean;
	/**
	 * Runs `sql` with bound parameters. `sql` names datasets as `{transfers}` etc.; the store
	 * replaces them with the chain's own file list. Only the store builds SQL text, and only from
	 * its own identifiers and paths: every user value arrives in `params`. Fails with
	 * QueryTimeoutError past the time budget.
	 */
	query(chain: string, sql: string, params?: Params): Promise<Row[]>;
	/**
	 * The chain's files as of now, fixed: every query of one API request goes through one
	 * snapshot, so a reorg or compaction committed meanwhile cannot show it a mix of states.
	 * Its queries share one time budget.
	 */
	snapshot(chain: string): Snapshot;
	/**
	 * The listed files of the chain found missing or damaged (for /readyz): each file is checked
	 * once when a manifest first lists it (names are never reused), and again when a query on it
	 * fails. Waits for the check of the current manifest's files.
	 */
	damage(chain: string): Promise<DamagedFile[]>;
	/** What is wrong with the chain's manifest (then every snapshot fails with MANIFEST_DAMAGED), or null. */
	manifestProblem(chain: string): string | null;
	/**
	 * The chain's files' state, for HTTP caching (api/http-cache.ts): the manifest's generation,
	 * which every write changes, and the final block (no answer at or below it changes again: the
	 * follower's final_through, or SETTLE_DEPTH below the tip in a folder no follower keeps).
	 * Null for a chain with no readable manifest.
	 */
	state(chain: string): ChainState | null;
	/** The same of a snapshot's manifest (Snapshot.manifest), with no look at the file. */
	stateOf(manifest: Manifest): ChainState;
	/** The file whose replacement commits each of the chain's writes (for watchers: api/live/head-watcher.ts). */
	manifestFile(chain: string): string;
	close(): void;
}

export interface Snapshot {
	chain: string;
	hasDataset(dataset: DatasetName): boolean;
	/**
	 * `window`: read only the files of chunks that overlap these blocks (see list.ts); a
	 * `{name@from-to}` placeholder has a window of its own. `key`: the
	 * wallet or hash the statement looks up in an index (`{transfers_by_address}` etc.); index
	 * runs whose key filter rules it out are not read at all, and a statement left with no file
	 * to read answers no rows without running.
	 */
	query(sql: string, params?: Params, window?: readonly [number, number], key?: string): Promise<Row[]>;
	/** Whether a chunk's rows of `index` can be read (its own index file, or a merged run). */
	indexed(index: IndexName, chunk: ChunkEntry): boolean;
	/**
	 * The files of `index` over `window`, in block order, each with `key`'s rows in it as its key
	 * filter tells (none, "few", or a busy key's count): what a busy wallet's windows are sized by
	 * (list.ts). Null where a file's filter cannot say (no filter, or written before the counts).
	 */
	keyRows(index: IndexName, key: string, window: readonly [number, number]): Promise<KeySpan[] | null>;
	/**
	 * The hash and timestamp of each of `blocks` this snapshot holds (a block it does not is left
	 * out), read from the blocks files a chunk at a time and kept (block-stamps.ts): for the rows
	 * stored without them (the wallet records).
	 */
	blockStamps(blocks: Iterable<number>): Promise<Map<number, BlockStamp>>;
	/** The holder ranks `{erc20_ranks}` reads, if usable with this snapshot's files (store/holder-ranks.ts). */
	ranks(): RankEntry | null;
	/** The head ranks `{erc20_head_ranks}` reads, if usable with this snapshot's files (store/holdings/head-ranks.ts). */
	headRanks(): HeadRanks | null;
	/** Whether `token` has enough ranked holdings for its holders pages to read the ranks (StoreOptions.ranksMinHoldings). */
	ranked(token: string): Promise<boolean>;
	/** The chunks stored, in block order. */
	chunks(): readonly ChunkEntry[];
	/** The manifest this snapshot reads (the SQL endpoint's views list its files); never to be changed. */
	manifest(): Manifest | null;
	/** Blocks per partition of the chain's writers (manifest `partition_size`), if recorded. */
	partitionSize(): number | undefined;
	/** The newest block stored, or null while there is none. */
	head(): number | null;
	/**
	 * `compute()`'s result, computed once per state of the chain's files: the files a manifest
	 * lists never change, so an answer that depends only on them (the latest block) can be
	 * reused until the manifest changes. A failure is not kept.
	 */
	memo<T>(key: string, compute: () => Promise<T>): Promise<T>;
	/** Milliseconds its statements have run in DuckDB so far (the answer's Server-Timing: api/context.ts). */
	queryMs(): number;
}
