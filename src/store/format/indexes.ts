import type { DatasetName } from "../../extract/rows.js";
import {
	ADDRESS_LAYOUTS,
	type AddressRecordsKind,
	addressRecordColumns,
	addressRecordsSql,
} from "./address-records.js";
import {
	deltaColumns,
	deltasSql,
	type HoldingKind,
	mergeDeltasSql,
	movesSql,
	NATIVE_SOURCES,
	nativeMovesSql,
} from "./deltas.js";
import { blockRecordsSql, RECORD_COLUMNS, transactionRecordsSql } from "./lookup-records.js";

/**
 * Index files: per chunk, a copy of a dataset's rows re-sorted by address, one row per side
 * (sender and recipient, from and to). Parquet keeps min/max statistics per row group, so in a
 * file sorted by address a wallet's rows sit in one or a few row groups that a query reads
 * while skipping the rest; in the chain-ordered dataset files the same rows are spread over
 * every row group, which only a bloom filter could skip (the datasets keep them for their
 * repeating columns only: parquet-writer.ts PARQUET_OPTIONS).
 *
 * They are plain Parquet next to the datasets (`<data>/<chain>/<index>/<index>_<range>.parquet`),
 * derived from the chunk's dataset file whenever it is written, merged or replaced, and listed in
 * the manifest's `indexes`. Chunks written before indexes existed have none; readers then use
 * the dataset itself.
 */
export interface IndexDef {
	source: DatasetName;
	/** Other datasets of the same chunk it reads (a chunk without them has no such index). */
	also?: readonly DatasetName[];
	/** The index's rows, from a relation `src` of the source dataset (and `rel(d)` of the others). */
	select(src: string, rel: (d: DatasetName) => string): string;
	/** Sort order of the file; the first column, `key`, is the one min/max statistics prune on. */
	sortKey: string;
	/** The column a lookup names (a wallet, a hash); key filters (key-filter.ts) are built over it. */
	key: "address" | "hash" | "token";
	/** Rows per row group: a lookup decodes one whole row group of the columns it reads. */
	rowGroupSize: number;
	/**
	 * Written by the small-groups writer (files/small-groups.ts) instead of DuckDB's COPY, whose
	 * row groups are 2,048 rows at least: for `rowGroupSize` below that.
	 */
	smallGroups?: true;
	/**
	 * Keys with more rows than this in a file are listed as busy in its key filter
	 * (indexes/key-filter.ts): a wallet busy in none of its files reads them all at once.
	 */
	busyRows?: number;
	/**
	 * A busy key's own part is split by `block_number` into parts of at most a part's rows
	 * (key-parts.ts sliceCut): for an index sorted by key then id, whose pages read a key's rows a
	 * window of blocks at a time.
	 */
	slices?: true;
	/** Row groups a key-range part holds (key-parts.ts; default PART_ROW_GROUPS). */
	partRowGroups?: number;
	/**
	 * Derived later, by the background merges (merges.ts: settled chunks first, then the others),
	 * not when a chunk is written: keeps a backfill's chunk commits, the follower's catch-up and
	 * its head appends as cheap as before; readers sum the chunks that lack it from their source
	 * dataset.
	 */
	deferred?: boolean;
	/** How runs merge files `src` of this index (default: every row, re-sorted). */
	merge?(src: string): string;
	/** Its columns with their types, where they are not the source's plus `key` (an empty relation's). */
	columns?: Record<string, string>;
	/**
	 * Replaced by another kind: no longer written or derived, still read where a folder written
	 * before the replacement has it for every chunk (until `npm run reindex` writes its
	 * replacement and drops it).
	 */
	replacedBy?: string;
	/**
	 * Each run also copied into a DuckDB database with an index on the key (indexes/lookup-db.ts),
	 * which the service's lookups read instead of the run's Parquet parts.
	 */
	lookupDb?: true;
	doc: string;
}

/** An index of balance deltas (deltas.ts) of one kind, sorted by `sortKey`. */
const deltas = (kind: HoldingKind, sortKey: string, key: "address" | "token", doc: string): IndexDef => ({
	source: "transfers",
	...(kind === "native" ? { also: NATIVE_SOURCES.filter((d) => d !== "transfers") } : {}),
	select: (src, rel) => deltasSql(kind === "native" ? nativeMovesSql(rel) : movesSql(src, kind), kind),
	sortKey,
	key,
	rowGroupSize: 16_384,
	deferred: true,
	merge: (src: string) => mergeDeltasSql(src, kind),
	columns: deltaColumns(kind),
	doc,
});
const DELTAS_DOC =
	"net change of the holding over the file's blocks, as signed sums `d0`..`d8` of the amounts' 9-digit decimal limbs (balance = Σ d_k × 10^(9k), exact for uint256), with the first and last block of a change and the transfers counted; merged runs sum them";

/**
 * Row groups of the by-address indexes. A wallet lookup decompresses the whole row group its
 * rows sit in, of every column it reads, and the address column alone prunes the rest. As
 * records (address-records.ts: three columns read instead of 15 or 25), measured on M's newest
 * transfers part (issue 26, BENCHMARKS.md "third figures"): a quiet wallet's rows 1.77-1.89 ms in
 * groups of 2,048 (DuckDB's smallest), 2.15-3.00 in groups of 4,096; the 15 columns in groups of
 * 4,096 took 5.2-5.7. Smaller still, written by the small-groups writer (small-groups.ts): a
 * median wallet's statement over part 0 of M's run, 39,834 rows in groups of 2,048, took 3.16 ms;
 * the same rows in groups of 512 2.55; a part of 16,384 rows in 32 groups of 512 1.94, and a
 * median account's transactions 4.73 → 2.42 (BENCHMARKS.md "twenty-third figures"). Key-range
 * parts (key-parts.ts) keep each file at about 32 groups, so a part is 16,384 rows.
 */
export const BY_ADDRESS_ROW_GROUP_SIZE = 512;
/**
 * A key with more rows than this in a by-address file is listed busy in its key filter (a row
 * group's rows when groups were 2,048: kept, as what makes a wallet read a window at a time).
 */
const BY_ADDRESS_BUSY_ROWS = 2_048;
/** The lookup records' row groups, and how many of them a key-range part holds (see transaction_records). */
const RECORD_ROW_GROUP_SIZE = 256;
const RECORD_PART_ROW_GROUPS = 16;
/** What the by-address indexes were before records: whole rows in groups of 4,096 (+13% bytes over 16,384). */
const BY_ADDRESS_ROWS_GROUP_SIZE = 4_096;

/** The other side is kept only when it differs, so a self-transfer appears once. */
const bySides = (a: string, b: string) => (src: string) =>
	`SELECT ${a} AS address, * FROM ${src} WHERE ${a} IS NOT NULL UNION ALL SELECT ${b} AS address, * FROM ${src} WHERE ${b} IS NOT NULL AND ${b} IS DISTINCT FROM ${a}`;

/** A by-address records kind (address-records.ts) over `sides`: one, or two (the second kept only where it differs). */
const addressRecords = (kind: AddressRecordsKind, sides: readonly [string, string?], doc: string) => {
	const layout = ADDRESS_LAYOUTS[kind];
	return {
		source: layout.dataset,
		select: addressRecordsSql(layout, sides),
		sortKey: "address, id",
		key: "address" as const,
		rowGroupSize: BY_ADDRESS_ROW_GROUP_SIZE,
		smallGroups: true as const,
		busyRows: BY_ADDRESS_BUSY_ROWS,
		slices: true as const,
		columns: addressRecordColumns(layout),
		doc,
	};
};

export const INDEXES = {
	// A wallet's pages: by-address records (address-records.ts), without the block's fields.
	wallet_transfers: addressRecords(
		"wallet_transfers",
		["sender", "recipient"],
		`every transfer once per address it involves (\`address\` = sender, then recipient if different) with its \`id\`, \`block_number\`, which side the address is (\`side\`: out, in or self), the columns a page filters on (\`asset_type\`, \`token_standard\`, \`contract\`) and its fields as one JSON array (\`record\`: ${ADDRESS_LAYOUTS.wallet_transfers.record.join(", ")}; the block's hash and timestamp are the blocks dataset's); sorted by address and id`,
	),
	wallet_transactions: addressRecords(
		"wallet_transactions",
		["from_address", "to_address"],
		`every transaction once per address it involves (\`address\` = from_address, then to_address if different) with its \`id\`, \`block_number\`, which side the address is (\`side\`: out, in or self) and its fields as one JSON array (\`record\`: ${ADDRESS_LAYOUTS.wallet_transactions.record.join(", ")}; the block's hash and timestamp are the blocks dataset's); sorted by address and id`,
	),
	// A token's transfers (`/contract/{token}/transfers`) read the dataset, every row group holding
	// one of its rows: 500 ms at M for a median token, its 125 transfers spread over 100 groups of
	// 65,536 rows, and 20-38 ms for the busiest (BENCHMARKS.md "eighth figures").
	token_transfers: addressRecords(
		"token_transfers",
		["contract"],
		`every token transfer (ERC-20, ERC-721, ERC-1155) by its contract (\`address\`) with its \`id\`, \`block_number\`, the columns a page filters on (\`asset_type\`, \`token_standard\`) and its fields as one JSON array (\`record\`: as \`wallet_transfers\`); sorted by address and id`,
	),
	// A caller's contract creations (a factory's): `/contracts/creates?caller=` read the dataset,
	// 13 columns of every row group, 8-10 ms at M for a median factory (BENCHMARKS.md "fifth figures").
	wallet_creations: addressRecords(
		"wallet_creations",
		["caller"],
		`every contract creation by its caller (\`address\`) with its \`id\`, \`block_number\` and its fields as one JSON array (\`record\`: ${ADDRESS_LAYOUTS.wallet_creations.record.join(", ")}; the block's hash and timestamp are the blocks dataset's); sorted by address and id`,
	),
	// Their predecessors: still read in folders that have them for every chunk, until reindex
	// replaces them. First records holding every field, then whole rows.
	transfer_records_by_address: {
		...addressRecords(
			"transfer_records_by_address",
			["sender", "recipient"],
			"(replaced by wallet_transfers; written before it) as `wallet_transfers`, its record holding the block's hash and timestamp too",
		),
		// As they were written (never written now).
		rowGroupSize: 2_048,
		replacedBy: "wallet_transfers",
	},
	transaction_records_by_address: {
		...addressRecords(
			"transaction_records_by_address",
			["from_address", "to_address"],
			"(replaced by wallet_transactions; written before it) as `wallet_transactions`, its record holding the block's hash and timestamp too",
		),
		// As they were written (never written now).
		rowGroupSize: 2_048,
		replacedBy: "wallet_transactions",
	},
	transfers_by_address: {
		source: "transfers",
		select: bySides("sender", "recipient"),
		sortKey: "address, id",
		key: "address",
		rowGroupSize: BY_ADDRESS_ROWS_GROUP_SIZE,
		replacedBy: "wallet_transfers",
		doc: "(replaced by wallet_transfers; written before it) every transfers row once per address it involves (`address` = sender, then recipient if different), sorted by address and id",
	},
	transactions_by_address: {
		source: "transactions",
		select: bySides("from_address", "to_address"),
		sortKey: "address, id",
		key: "address",
		rowGroupSize: BY_ADDRESS_ROWS_GROUP_SIZE,
		replacedBy: "wallet_transactions",
		doc: "(replaced by wallet_transactions; written before it) every transactions row once per address it involves (`address` = from_address, then to_address if different), sorted by address and id",
	},
	// Lookup records (lookup-records.ts): a lookup by hash reads two columns of one small row
	// group of one file (chosen by the run's key filter), a transaction's logs included. Groups
	// of 256 rows (small-groups.ts: DuckDB decompresses the whole group of the record column,
	// 0.7 MB of JSON in 512), 16 of them a key-range part (DuckDB spends about 3 µs on each row
	// group of a file it opens, all pruned or not): a lookup in M's records 1.20 → 0.84 ms against
	// groups of 512 in parts of 128, for 1-2% more bytes (BENCHMARKS.md "fourteenth figures").
	// zstd, as every file: on M's newest chunk (1M transactions with their logs) lz4_raw took
	// 950 MB against zstd's 462 (a lookup 1.8-2.2 ms against 3.8-3.9 in 17 key-range files of
	// 32 row groups): records must replace the full-row copy's bytes, not double them
	// (BENCHMARKS.md); and some Parquet readers (hyparquet) cannot read lz4_raw at all.
	transaction_records: {
		source: "transactions",
		also: ["logs"],
		select: transactionRecordsSql,
		sortKey: "hash",
		key: "hash",
		rowGroupSize: RECORD_ROW_GROUP_SIZE,
		smallGroups: true,
		partRowGroups: RECORD_PART_ROW_GROUPS,
		columns: RECORD_COLUMNS,
		// As the block records' below: through the API a transaction by hash took 0.79 of its time
		// at M (7.56 → 5.96 ms p50, BENCHMARKS.md "twenty-second figures"), for a database of about
		// twice the run's Parquet bytes beside it (M: 327 MiB of Parquet in the run, 645 of database;
		// the lake then 44% of PostgreSQL's tables and indexes, under the 50%).
		lookupDb: true,
		doc: "every transaction (`hash`) with its record: its fields and its logs' as one JSON array (`record`; field order in the code's lookup-records.ts), sorted by hash, in small row groups: `/txs/{hash}` reads one",
	},
	block_records: {
		source: "blocks",
		select: blockRecordsSql,
		sortKey: "hash",
		key: "hash",
		rowGroupSize: RECORD_ROW_GROUP_SIZE,
		smallGroups: true,
		partRowGroups: RECORD_PART_ROW_GROUPS,
		columns: RECORD_COLUMNS,
		// A block by hash stood at 11-12x PostgreSQL through Parquet, whose every read DuckDB binds
		// and plans again; a table of its own format keeps the plan and finds the row through its
		// index (BENCHMARKS.md "seventeenth figures": 0.775 → 0.447 ms a lookup), for about twice
		// this small index's Parquet bytes beside them (M: 22 MiB of Parquet, 45-48 of database).
		lookupDb: true,
		doc: "every block (`hash`) with its record: its fields as one JSON array (`record`), sorted by hash, in small row groups: `/blocks/{hash}` reads one",
	},
	// Their predecessors, full copies of the rows sorted by hash: still read in folders that have
	// them for every chunk, until reindex replaces them.
	transactions_by_hash: {
		source: "transactions",
		select: (src: string) => `SELECT transaction_hash AS hash, * FROM ${src}`,
		sortKey: "hash",
		key: "hash",
		rowGroupSize: 2_048,
		replacedBy: "transaction_records",
		doc: "(replaced by transaction_records; written before it) every transactions row, sorted by transaction hash (`hash`)",
	},
	blocks_by_hash: {
		source: "blocks",
		select: (src: string) => `SELECT * FROM ${src}`,
		sortKey: "hash",
		key: "hash",
		rowGroupSize: 2_048,
		replacedBy: "block_records",
		doc: "(replaced by block_records; written before it) every blocks row, sorted by block hash",
	},
	// Balances (query/balances.ts): per chunk, and per run once merged, each holder's net change
	// of each ERC-20 token, summed exactly (uint256 as signed 9-digit limbs: amounts.ts); by
	// holder for a wallet's tokens, by token for a token's holders.
	erc20_balances: deltas(
		"erc20",
		"address, token",
		"address",
		`each holder's (\`address\`) ERC-20 token (\`token\`): ${DELTAS_DOC}; sorted by address and token`,
	),
	erc20_holders: deltas(
		"erc20",
		"token, address",
		"token",
		"the rows of `erc20_balances`, sorted by token and address (a token's holders)",
	),
	// The same for ERC-721 and ERC-1155 holdings, per token id (a count of 1 or 0 for ERC-721).
	nft_balances: deltas(
		"nft",
		"address, token, token_id",
		"address",
		`each holder's (\`address\`) NFTs, per collection (\`token\`) and id (\`token_id\`): ${DELTAS_DOC}; sorted by address, token and token id`,
	),
	// Native currency (ETH) per account, from transfers, transactions, blocks and traces.
	native_balances: deltas(
		"native",
		"address",
		"address",
		`each account's (\`address\`; \`token\` is 'native') native currency: value transfers, gas fees paid, fee tips received, withdrawals and rewards; ${DELTAS_DOC}; needs traces`,
	),
	nft_holders: deltas(
		"nft",
		"token, token_id, address",
		"token",
		"the rows of `nft_balances`, sorted by token, token id and address (a collection's owners)",
	),
} as const satisfies Record<string, IndexDef>;

export type IndexName = keyof typeof INDEXES;
export const INDEX_NAMES = Object.keys(INDEXES) as IndexName[];

/** The indexes derived from a chunk that has files for `datasets` (replaced kinds are no longer). */
export const indexesFor = (datasets: readonly DatasetName[]): IndexName[] =>
	INDEX_NAMES.filter((i) => {
		const def: IndexDef = INDEXES[i];
		return def.replacedBy === undefined && [def.source, ...(def.also ?? [])].every((d) => datasets.includes(d));
	});

/** The kinds no longer written, each with the kind that replaced it. */
export const REPLACED: [IndexName, IndexName][] = INDEX_NAMES.flatMap((i) => {
	const by = (INDEXES[i] as IndexDef).replacedBy;
	return by ? [[i, by as IndexName]] : [];
});

const isDeferred = (i: IndexName): boolean => (INDEXES[i] as IndexDef).deferred === true;
/** The indexes written with a chunk's files (the deferred ones come later: merges.ts). */
export const writtenWith = (datasets: readonly DatasetName[]): IndexName[] =>
	indexesFor(datasets).filter((i) => !isDeferred(i));
/** The indexes derived later, in the background (the balance deltas). */
export const DEFERRED: IndexName[] = INDEX_NAMES.filter(isDeferred);
