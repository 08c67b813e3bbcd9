import { rm } from "node:fs/promises";
import { crashPoint } from "../../util/crash-point.js";
import { sqlString } from "../../util/sql-string.js";
import { saveManifest } from "../delta/save-manifest.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { amountSql, LIMBS, normalizedPartsSql, PARTS } from "../format/amounts.js";
import { partCondition, partPath, partPaths, partsFor } from "../format/key-parts.js";
import type { RangeId } from "../format/layout.js";
import { nextGeneration, rankFiles, rankPath } from "../format/manifest.js";
import {
	type ChunkEntry,
	HEAD_RANKS,
	type Manifest,
	RANKS,
	type RankEntry,
	type RankTable,
	settledRanksOf,
	WALLET_RECORDS,
	WALLETS,
} from "../format/records.js";
import { indexFiles, isIndexed } from "../indexes/listing.js";
import { settledChunks } from "../indexes/runs.js";

/*
 * Holder ranks: every ERC-20 holding's balance as of one block S, summed once from the
 * `erc20_holders` index files (the merged runs, index.ts) and stored ranked, per token by balance
 * (largest first, then address), sorted by (token, rank) in key-range parts by token. A token's
 * first page of holders at S is then its first ranked rows as they are, and at a later block those
 * plus the few holdings that changed after S (summed as before, from the files after S and the
 * tail), instead of every holding of the token summed over every run and ordered on each request:
 * what an explorer's balances table with a (token, balance) B-tree answers, kept as immutable
 * Parquet files. A second table holds the same rows by holder, one record per wallet
 * (`erc20_wallet_records`, writeWalletRecords), so a wallet's balances are its record there plus
 * its changes after S.
 *
 * S is the end of the longest prefix of the chain whose holders rows are all in index files: of its
 * settled chunks in a folder a follower keeps, of all of them in one no follower keeps (rankableChunks).
 * A ranks file never goes wrong; it only stops being usable when its block stops being a chunk's
 * end with the same hash (a reorg, a compaction) or a later merge writes a run across S (the sums
 * after S could then not be told apart): readers check that (usableRanks) and otherwise sum every
 * run as before. Rebuilt (ranksStep) whenever S moves: by the follower in its background merges
 * once caught up, and at the end of a backfill, synth or reindex, so a backfill builds it once
 * rather than per chunk.
 */

/** Its columns with their types (for an empty relation, and data/README.md). */
export const RANK_COLUMNS: Record<string, string> = {
	token: "VARCHAR",
	address: "VARCHAR",
	...Object.fromEntries(LIMBS.map((l) => [l, "BIGINT"])),
	last_block: "BIGINT",
	...Object.fromEntries(PARTS.map((p) => [p, "DECIMAL(38,0)"])),
	rank: "BIGINT",
};

/**
 * Rows per row group, in key-range parts by token of PART_ROW_GROUPS groups each
 * (format/key-parts.ts), as DuckDB walks every group of a file it opens and decodes a whole group
 * for the rows it keeps. On M's ranks at the tip (1,776,700 holdings), a token's page of 100 from
 * its part: 2.43 ms in groups of 8,192 (34 a part), 1.83 in groups of 1,024 (32 a part); in one
 * file of 217 groups its rows cost 5-9 ms just to count (BENCHMARKS.md "eighteenth figures").
 */
export const RANK_ROW_GROUP_SIZE = 1_024;
/**
 * After the ranks' block, a token's holders pages read the ranks only from this many ranked
 * holdings in row groups of their own (StoreOptions.ranksMinHoldings): below that, summing its
 * holdings from the index files costs less than its ranked rows plus the changes after them.
 */
export const RANKS_MIN_HOLDINGS = 8_192;
/** The COPY options of the ranks file. */
export const RANK_COPY_OPTIONS = `FORMAT parquet, COMPRESSION 'zstd', ROW_GROUP_SIZE ${RANK_ROW_GROUP_SIZE}`;
/** Each file's row order. */
export const RANK_ORDER: Record<RankTable, string> = {
	[RANKS]: "token, rank",
	[HEAD_RANKS]: "token, rank",
	[WALLETS]: "address, token",
	[WALLET_RECORDS]: "address",
};

/** The wallet records' columns (the record: WALLET_RECORD_FIELDS of each holding, by token). */
export const WALLET_RECORD_COLUMNS: Record<string, string> = { address: "VARCHAR", record: "VARCHAR" };
/** A holding's fields in a wallet record, each as text: the token, its balance (decimal) and last block. */
export const WALLET_RECORD_FIELDS = ["token", "balance", "last_block"] as const;
/**
 * Rows per row group of the wallet records: DuckDB's smallest. A wallet's record is one row, but
 * DuckDB decodes the whole group it sits in (and walks every group of the file: key-range parts of
 * PART_ROW_GROUPS groups). Measured on M's ranks (994,140 holdings of 457,266 wallets, 8 parts)
 * against the 12 columns of its rows sorted by holder in groups of 8,192: a cold or median
 * wallet's balances 5.2-7.6 → 1.1-1.3 ms, the heavy wallet's (8,179 tokens) whole list 0.95x,
 * its first page 0.73x; 44 → 38 MB (BENCHMARKS.md "tenth figures").
 */
export const WALLET_RECORD_ROW_GROUP_SIZE = 2_048;

/**
 * SQL of every holding of the ranks file at `ranks` (its sums done) as a wallet record holds it,
 * sorted by holder then token: the balance as one decimal number (what the limbs add up to,
 * amounts.ts amountSql) and the last block, as text.
 */
export function walletHoldingsSql(ranks: string): string {
	return `SELECT address, token, CAST(${amountSql()} AS VARCHAR) AS balance, last_block::VARCHAR AS last_block
		FROM read_parquet(${sqlString(ranks)}) ORDER BY address, token`;
}

/**
 * SQL of the records of the wallets of key-range part `i` of `parts`, by address, from the
 * holdings file at `holdings` (walletHoldingsSql, sorted by address: a part reads its groups only).
 */
export function walletRecordsSql(holdings: string, i: number, parts: number): string {
	return `SELECT address, to_json(list_sort(list([token, balance, last_block])))::VARCHAR AS record
		FROM read_parquet(${sqlString(holdings)}) WHERE ${partCondition("address", i, parts)}
		GROUP BY address ORDER BY ${RANK_ORDER[WALLET_RECORDS]}`;
}

/** The wallet records' COPY options. */
const WALLET_RECORD_COPY_OPTIONS = `FORMAT parquet, COMPRESSION 'zstd', ROW_GROUP_SIZE ${WALLET_RECORD_ROW_GROUP_SIZE}, PARQUET_VERSION 'V2'`;

/**
 * Writes every wallet's record, by holder, from the ranks file at `ranks` (its sums done) into
 * key-range parts of `wallets`; returns the parts. Every holding once sorted by holder (a sort,
 * which DuckDB spills past its memory limit), then each part's records from the groups of that
 * file its address range covers. One GROUP BY of every wallet at once held all their lists in
 * memory: at L (16.1M holdings) it ran out of the writer's 4 GB, as it would at any larger chain
 * (test/store/wallet-records.test.ts writes 600,000 wallets' records within 150 MB).
 */
export async function writeWalletRecords(writer: ParquetWriter, ranks: string, wallets: string): Promise<number> {
	const holdings = wallets.replace(/\.parquet$/, ".holdings.parquet");
	// (A step's own file, in the records' groups: removed once they are written.)
	await writer.copy(walletHoldingsSql(ranks), holdings, WALLET_RECORD_COPY_OPTIONS);
	try {
		const parts = partsFor(await writer.countDistinct(holdings, "address"), WALLET_RECORD_ROW_GROUP_SIZE);
		for (let i = 0; i < parts; i++)
			await writer.copy(walletRecordsSql(holdings, i, parts), partPath(wallets, i), WALLET_RECORD_COPY_OPTIONS);
		return parts;
	} finally {
		await rm(holdings, { force: true });
	}
}

/**
 * Writes the ranked holdings of the file at `whole` (`rows` of them) into key-range parts by token
 * at `path` (part 0 at `path` itself); returns the parts. A token never splits: its pages read the
 * one part it falls in. (In one pass: a part per scan of the whole file took L's 1,024 parts 7 of
 * the build's 11 minutes, BENCHMARKS.md "eighteenth figures".)
 */
export async function writeRankParts(
	writer: ParquetWriter,
	whole: string,
	path: string,
	rows: number,
): Promise<number> {
	const parts = partsFor(rows, RANK_ROW_GROUP_SIZE);
	await writer.copyParts(
		`SELECT * FROM read_parquet(${sqlString(whole)})`,
		"token",
		parts,
		RANK_ORDER[RANKS],
		path,
		RANK_COPY_OPTIONS,
	);
	return parts;
}

/**
 * The chunks ranks may cover, in block order. In a folder a follower keeps (`final_through`
 * listed), the settled ones: its head chunks are compacted into larger windows (each such write
 * spans the ranks' block, so they would be rebuilt every few dozen blocks) and reorged. In a
 * folder no follower keeps (a finished backfill, synth or reindex), every chunk: nothing there
 * compacts or reorgs, and a chain that ends at a partition's end never settles its last partition
 * (no block comes after it), whose changes a page would otherwise sum on every request: at M
 * the heaviest token changed all 2,062 of its holdings in that partition (BENCHMARKS.md
 * "eighteenth figures"). A follower started on such a folder later keeps its ranks while they are
 * usable (a reorg or a compaction across their block ends that: usableRanks), then ranks its
 * settled chunks.
 */
function rankableChunks(m: Manifest): ChunkEntry[] {
	return m.final_through === undefined ? [...m.chunks].sort((a, b) => a.from - b.from) : settledChunks(m);
}

/**
 * The longest prefix of the chain, from its first chunk, of `chunks` (in block order) whose
 * `erc20_holders` rows are in index files.
 */
function indexedPrefix(m: Manifest, chunks: readonly ChunkEntry[]): RangeId | null {
	const first = Math.min(...m.chunks.map((c) => c.from));
	let out = null as RangeId | null;
	for (const c of chunks) {
		if (out ? c.from !== out.to + 1 : c.from !== first) break;
		if (!c.datasets.includes("transfers") || !isIndexed(m, "erc20_holders", c)) break;
		out = { from: out?.from ?? c.from, to: c.to, last_hash: c.last_hash };
	}
	return out;
}

/** Where ranks are built: the indexed prefix of the rankable chunks (rankableChunks). */
export const rankable = (m: Manifest): RangeId | null => indexedPrefix(m, rankableChunks(m));

/**
 * The indexed prefix of every chunk, settled or not, up to block `through` (where usable ranks
 * may end; head-ranks.ts).
 */
export const indexedChain = (m: Manifest, through = Number.POSITIVE_INFINITY): RangeId | null =>
	indexedPrefix(
		m,
		[...m.chunks].filter((c) => c.to <= through).sort((a, b) => a.from - b.from),
	);

/** A value computed once per manifest state (a writer's manifest changes in place; its saves bump the generation). */
export type PerState<V> = WeakMap<Manifest, { key: string; value: V }>;
export function perManifestState<V>(cache: PerState<V>, m: Manifest, compute: () => V): V {
	const key = `${m.generation ?? 0}\0${m.runs?.length ?? 0}\0${m.chunks.length}`;
	const cached = cache.get(m);
	if (cached?.key === key) return cached.value;
	const value = compute();
	cache.set(m, { key, value });
	return value;
}

/**
 * Whether ranks at `r` still stand in manifest `m`: a chunk ends at their block with its hash (no
 * reorg replaced it, no compaction merged it with later blocks) and no holders index file spans it
 * (a run merged across it), so the changes after it can be told apart.
 */
export const standsAt = (dataDir: string, m: Manifest, r: RangeId): boolean =>
	m.chunks.some((c) => c.to === r.to && c.last_hash === r.last_hash) &&
	indexFiles(dataDir, m, "erc20_holders", [r.to, r.to + 1]).every((f) => !(f.from <= r.to && f.to > r.to));

const usable: PerState<RankEntry | null> = new WeakMap();

/**
 * The listed ranks, if readers can use them with manifest `m`: the chain still starts where they
 * do, every chunk up to their last block has its holders rows in index files, and they still
 * stand at their block (standsAt). Settled or not: that decides only where ranks are built
 * (rankable). Computed once per manifest state.
 */
export function usableRanks(dataDir: string, m: Manifest | null): RankEntry | null {
	const r = settledRanksOf(m);
	if (!m || !r) return null;
	return perManifestState(usable, m, () => {
		const prefix = indexedChain(m);
		const ok = prefix !== null && prefix.from === r.from && prefix.to >= r.to && standsAt(dataDir, m, r);
		return ok ? r : null;
	});
}

/**
 * Whether the ranks should be rebuilt: the rankable prefix moved past them, the listed ones are
 * no longer usable, or they were written before wallet records (their wallet file is not read any
 * more) or before key-range parts (one file, which every page of a token walks whole: at L, 16M
 * rows, a followed folder's page of a large token through them took 114-165 ms against 34-46
 * summed, BENCHMARKS.md "nineteenth figures"). (Usable ranks beyond the rankable prefix, written
 * before a follower took the folder over, are kept.)
 */
export function ranksDue(dataDir: string, m: Manifest): boolean {
	const prefix = rankable(m);
	const r = settledRanksOf(m);
	if (!prefix) return false;
	return (
		!r ||
		r.from !== prefix.from ||
		r.to < prefix.to ||
		r.walletRecordParts === undefined ||
		r.rankParts === undefined ||
		usableRanks(dataDir, m) === null
	);
}

/** SQL of the ranked holdings of the holders index files `files` (see the module comment). */
export const ranksSql = (files: readonly string[]): string =>
	rankedSql(`SELECT * FROM read_parquet([${files.map(sqlString).join(", ")}])`);

/**
 * SQL of the holdings of `rows` (a relation of token, address, the limbs and last_block: index
 * files' rows, ranked rows, or both) summed per holding and ranked per token, in RANK_ORDER.
 */
export function rankedSql(rows: string): string {
	const sums = LIMBS.map((l) => `sum(${l})::HUGEINT AS ${l}`).join(", ");
	const order = [...PARTS]
		.reverse()
		.map((p) => `${p} DESC`)
		.join(", ");
	return `WITH s AS (SELECT token, address, ${sums}, max(last_block) AS last_block FROM (${rows}) GROUP BY token, address),
		t AS (SELECT *, ${normalizedPartsSql()} FROM s)
		SELECT token, address, ${LIMBS.map((l) => `CAST(${l} AS BIGINT) AS ${l}`).join(", ")}, last_block::BIGINT AS last_block,
		       ${PARTS.map((p) => `CAST(${p} AS DECIMAL(38,0)) AS ${p}`).join(", ")},
		       row_number() OVER (PARTITION BY token ORDER BY ${order}, address)::BIGINT AS rank
		FROM t WHERE NOT (${PARTS.map((p) => `${p} = 0`).join(" AND ")})
		ORDER BY ${RANK_ORDER[RANKS]}`;
}

type Exclusive = <T>(commit: () => Promise<T>) => Promise<T>;

/**
 * Writes the ranks of the rankable prefix and lists them in one save, if due. Returns the files
 * the save unlisted (the previous ranks, for the caller to retire), or null when none was due.
 */
export async function ranksStep(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	exclusive: Exclusive = (commit) => commit(),
): Promise<string[] | null> {
	if (!ranksDue(dataDir, m)) return null;
	const prefix = rankable(m) as RangeId;
	const entry: RankEntry = { ...prefix, gen: nextGeneration(m), rows: 0 };
	const path = rankPath(dataDir, m.chain, entry);
	const wallets = rankPath(dataDir, m.chain, entry, WALLET_RECORDS);
	const files = indexFiles(dataDir, m, "erc20_holders", [prefix.from, prefix.to]).flatMap((f) =>
		partPaths(f.path, f.parts),
	);
	// Every holding in one file first (the wallet records are written from it), then in parts by token.
	// A crash leaves files no manifest lists, which the next writer's start removes.
	const whole = path.replace(/\.parquet$/, ".whole.parquet");
	let parts: number;
	try {
		entry.rows = await writer.copy(ranksSql(files), whole, RANK_COPY_OPTIONS);
		parts = await writeWalletRecords(writer, whole, wallets);
		entry.walletRecordParts = parts;
		entry.rankParts = await writeRankParts(writer, whole, path, entry.rows);
	} finally {
		await rm(whole, { force: true });
	}
	crashPoint("ranks.written");
	return exclusive(async () => {
		// A repair may have unlisted a chunk of the prefix meanwhile: then these ranks are dropped.
		const now = rankable(m);
		if (!now || now.from !== entry.from || now.to < entry.to)
			return [...partPaths(path, entry.rankParts), ...partPaths(wallets, parts)];
		// Head ranks beyond the new block stay (head-ranks.ts); the others are of no more use.
		const kept = (m.ranks ?? []).filter((r) => r.tokens !== undefined && r.to > entry.to);
		const old = rankFiles(dataDir, { ...m, ranks: (m.ranks ?? []).filter((r) => !kept.includes(r)) });
		m.ranks = [entry, ...kept];
		await saveManifest(dataDir, m);
		return old;
	});
}
