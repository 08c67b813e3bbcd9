import type { DatasetName } from "../../extract/rows.js";
import type { TraceFormat } from "../../rpc/types.js";
import type { IndexName } from "./indexes.js";
import type { PartLayout, PartSplit } from "./key-parts.js";
import type { RangeId } from "./layout.js";

/*
 * The manifest's shape (format/): the Manifest and the records it holds, one type for each of its
 * lists and settings, and the tables those records name files in. Here, apart from the code that
 * reads and saves it (manifest.ts, manifest-check.ts), so that neither needs the other for its
 * types nor a module of the features that write the records (chunks/, indexes/runs.ts,
 * holdings/, delta/), which take them from here.
 */

/**
 * The checkpoint of a chain's data folder. A chunk is listed only after all its files are in
 * place, so the manifest is the truth: files it does not list are leftovers of a crash and are
 * removed on the next start. It holds no timestamps, so two runs over the same range write the
 * same bytes.
 */
export interface Manifest {
	/**
	 * 2 once an index file is split with cuts (format/key-parts.ts: busy keys' own parts), 3 once
	 * a cut splits a busy key by blocks (sliceCut), else 1: a chainlake that reads only a lower
	 * version would pick the wrong part of such a file, so it refuses the manifest instead
	 * (manifest.ts writeManifest sets it).
	 */
	version: 1 | 2 | 3;
	chain: string;
	chain_number: number;
	chunks: ChunkEntry[];
	/** Files of blocks that were reorged out (dataset ghost_blocks), kept so their hashes still answer. */
	ghosts?: GhostEntry[];
	/**
	 * The follower's record of the highest stored block it has treated as final (written in a
	 * partition chunk, or compacted): a reorg at or below it is a node fault, refused. Kept here
	 * rather than derived from the node's head, which moves on while the follower is down.
	 * Absent in folders only backfilled; -1 while a followed chain has no final block yet.
	 */
	final_through?: number;
	/**
	 * Counts the saves of this manifest (absent before generations existed = 0). Files are named
	 * after the generation that first lists them (layout.ts), so names are never reused.
	 */
	generation?: number;
	/** Merged index runs (indexes/runs.ts): where settled chunks' index rows are. */
	runs?: RunEntry[];
	/** Blocks per partition (--partition-size) of the writers: which chunks are settled (indexes/runs.ts). */
	partition_size?: number;
	/** Token metadata read from the node (holdings/token-metadata.ts), per settled block range covered. */
	metadata?: MetadataEntry[];
	/**
	 * Every ERC-20 holding's balance as of a settled block, ranked per token (holdings/holder-ranks.ts),
	 * first; then at most one entry of head ranks (`tokens` listed: holdings/head-ranks.ts).
	 */
	ranks?: RankEntry[];
	/**
	 * Rows (all datasets) from which a settled chunk is no longer merged (chunks/chunk-merges.ts);
	 * absent: COMPACT_ROWS.
	 */
	compact_rows?: number;
	/** The Delta Lake export's settings (delta/lake-export.ts); absent fields take the defaults. */
	lake?: Partial<LakeSettings>;
}

/** One written block range: its files exist for exactly the datasets listed. */
export interface ChunkEntry {
	from: number;
	to: number;
	/** Trace source used; "none" means the trace datasets are unavailable for this range. */
	traces: TraceFormat | "none";
	datasets: DatasetName[];
	rows: Partial<Record<DatasetName, number>>;
	/** Index files derived from the chunk's datasets (indexes.ts); absent in chunks written before them. */
	indexes?: IndexName[];
	/** Key-range parts of those written in more than one file (format/key-parts.ts); absent: one each. */
	parts?: Partial<Record<IndexName, number>>;
	/** Bounds of busy keys' own parts among those (format/key-parts.ts), sorted; absent: none. */
	cuts?: Partial<Record<IndexName, string[]>>;
	first_parent_hash: string;
	last_hash: string;
	/** The manifest generation that first listed the chunk's files; part of their names (layout.ts). */
	gen?: number;
}

/** A file of reorged-out blocks, with their hashes: a hash that becomes canonical again (a reorg
 * back to a block seen before) is taken out of it in the same save that lists the block. */
export interface GhostEntry extends RangeId {
	/** Absent in folders written before they were recorded; the follower fills them at start. */
	hashes?: string[];
}

/** A merged index run (indexes/runs.ts): the index rows of the adjacent settled chunks it covers,
 * in one file with its key filter beside it. */
export interface RunEntry extends RangeId {
	index: IndexName;
	gen: number;
	/** Partitions covered (named when each chunk was one partition): the level is floor(log_FAN_IN(chunks)). */
	chunks: number;
	rows: number;
	/** Distinct keys (the filter's size). */
	keys: number;
	/** Key-range files it is written in (format/key-parts.ts); absent: one. */
	parts?: number;
	/** Bounds of busy keys' own parts among them (format/key-parts.ts), sorted; absent: none. */
	cuts?: string[];
	/**
	 * Its rows also in a DuckDB database beside it (indexes/lookup-db.ts), for an index that has
	 * one (`lookupDb` in indexes.ts); absent: not written yet (the background merges write it).
	 */
	lookup_db?: true;
}

/** How run `r`'s file is split into key-range parts. */
export const runParts = (r: RunEntry): PartLayout => ({ parts: r.parts ?? 1, cuts: r.cuts });

/** Records how index `index`'s file of chunk `c` was written (`parts` and `cuts` absent when one, none). */
export function setChunkParts(c: ChunkEntry, index: IndexName, written: PartSplit): void {
	const { [index]: _parts, ...parts } = c.parts ?? {};
	const { [index]: _cuts, ...cuts } = c.cuts ?? {};
	c.parts = written.parts > 1 ? { ...parts, [index]: written.parts } : parts;
	c.cuts = written.cuts.length > 0 ? { ...cuts, [index]: written.cuts } : cuts;
	if (Object.keys(c.parts).length === 0) delete c.parts;
	if (Object.keys(c.cuts).length === 0) delete c.cuts;
}

/** Records how run `r`'s file was written. */
export function setRunParts(r: RunEntry, written: PartSplit): void {
	if (written.parts > 1) r.parts = written.parts;
	else delete r.parts;
	if (written.cuts.length > 0) r.cuts = written.cuts;
	else delete r.cuts;
}

/** Holder ranks (holdings/holder-ranks.ts): every ERC-20 holding's balance as of a settled block, ranked per token. */
export const RANKS = "erc20_ranks";
/**
 * Before wallet records: the same rows sorted by holder and token. Still listed by the entries
 * written then (RankEntry.walletRecordParts absent), which are rebuilt (holder-ranks.ts ranksDue).
 */
export const WALLETS = "erc20_wallets";
/**
 * A wallet's rows of the ranks as one record (holder-ranks.ts): `address` and its holdings as one
 * JSON text, in key-range parts by address (format/key-parts.ts), so a wallet's balances at S are
 * one row read from a file of a few dozen row groups, of two columns.
 */
export const WALLET_RECORDS = "erc20_wallet_records";
/**
 * Head ranks (holdings/head-ranks.ts): the busiest tokens' holdings ranked as of a block near the
 * head, laid out as RANKS is, for the pages after the holder ranks' block of a followed folder.
 */
export const HEAD_RANKS = "erc20_head_ranks";
/** Every table a ranks entry may have a file in (old entries: WALLETS; new ones: WALLET_RECORDS; head ranks: HEAD_RANKS). */
export const RANK_TABLES = [RANKS, WALLETS, WALLET_RECORDS, HEAD_RANKS] as const;
export type RankTable = (typeof RANK_TABLES)[number];

/** The ranks file listed in the manifest (`ranks`): the blocks its balances cover. */
export interface RankEntry extends RangeId {
	gen: number;
	/** Holdings ranked (non-zero balances). */
	rows: number;
	/** The wallet records' key-range parts; absent: an entry written before them, with a WALLETS file. */
	walletRecordParts?: number;
	/** The ranks file's key-range parts by token (holder-ranks.ts); absent: one file, as written before parts (then rebuilt: ranksDue). */
	rankParts?: number;
	/**
	 * Present in an entry of head ranks (holdings/head-ranks.ts) alone: the tokens it ranks (each with
	 * every holding it has), with how many holdings each has there, in HEAD_RANKS's `rankParts`
	 * parts; no wallet records.
	 */
	tokens?: Record<string, number>;
}

/** The holder ranks of `m` (its entry without `tokens`), if listed. */
export const settledRanksOf = (m: Manifest | null | undefined): RankEntry | undefined =>
	m?.ranks?.find((r) => r.tokens === undefined);
/** The head ranks of `m` (its entry with `tokens`), if listed. */
export const headRanksOf = (m: Manifest | null | undefined): RankEntry | undefined =>
	m?.ranks?.find((r) => r.tokens !== undefined);

/** The tables entry `r` has files in, with their key-range parts. */
export const rankTablesOf = (r: RankEntry): [RankTable, number][] =>
	r.tokens !== undefined
		? [[HEAD_RANKS, r.rankParts ?? 0]]
		: r.walletRecordParts === undefined
			? [
					[RANKS, 1],
					[WALLETS, 1],
				]
			: [
					[RANKS, r.rankParts ?? 1],
					[WALLET_RECORDS, r.walletRecordParts],
				];

/** A set of token metadata files (holdings/token-metadata.ts): one file in each of METADATA_TABLES
 * for the block range whose tokens and paying accounts it covers. */
export interface MetadataEntry {
	from: number;
	to: number;
	last_hash: string;
	gen: number;
	tokens: number;
	uris: number;
	openings: number;
}

/** The token metadata tables: their columns, row order and what they hold (data/README.md). */
export const METADATA_TABLES = {
	token_metadata: {
		columns: {
			address: "VARCHAR",
			standard: "VARCHAR",
			name: "VARCHAR",
			symbol: "VARCHAR",
			decimals: "INTEGER",
		},
		order: "address",
		doc: "each token contract first moved in the file's blocks: `standard` (erc20, erc721 or erc1155), `name`, `symbol`, `decimals` (ERC-20), as the contract answered when the file was written (the node's latest block); null where the call reverted or returned garbage",
	},
	token_uris: {
		columns: { contract: "VARCHAR", token_id: "VARCHAR", token_uri: "VARCHAR" },
		order: "contract, token_id",
		doc: "each ERC-721 and ERC-1155 token id first moved in the file's blocks, with its `tokenURI` (ERC-721) or `uri` (ERC-1155) when the file was written; null where the call reverted (a burnt token)",
	},
	opening_balances: {
		columns: { address: "VARCHAR", balance: "VARCHAR", read_at: "BIGINT" },
		order: "address",
		doc: "each account that first paid (sent value or gas) in the file's blocks, with its native balance at block 0 (`read_at`), decimal wei: the genesis allocation the native balances start from (only where the lake starts at block 0; null where the node has no state that old)",
	},
} as const;
export type MetadataTable = keyof typeof METADATA_TABLES;
export const METADATA_TABLE_NAMES = Object.keys(METADATA_TABLES) as MetadataTable[];

/** The Delta Lake export's settings (delta/lake-export.ts), kept in the manifest's `lake`. */
export interface LakeSettings {
	/** Write the Delta logs at all. */
	delta: boolean;
	/** How long a removed file stays on disk for engines reading an older version. */
	retention_minutes: number;
	/** Export only chunks of final blocks (at or below `final_through`): engines never see a reorg. */
	final_only: boolean;
}
