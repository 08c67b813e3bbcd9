import { rm } from "node:fs/promises";
import { crashPoint } from "../../util/crash-point.js";
import { sqlString } from "../../util/sql-string.js";
import { saveManifest } from "../delta/save-manifest.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { LIMBS } from "../format/amounts.js";
import { partOf, partPath, partPaths } from "../format/key-parts.js";
import type { RangeId } from "../format/layout.js";
import { nextGeneration, rankFiles, rankPath } from "../format/manifest.js";
import { HEAD_RANKS, headRanksOf, type Manifest, RANKS, type RankEntry, rankTablesOf } from "../format/records.js";
import { indexFiles } from "../indexes/listing.js";
import {
	indexedChain,
	type PerState,
	perManifestState,
	RANK_COPY_OPTIONS,
	rankedSql,
	standsAt,
	usableRanks,
	writeRankParts,
} from "./holder-ranks.js";

/*
 * Head ranks: in a folder a follower keeps, the holder ranks (holder-ranks.ts) stop at its settled
 * prefix, up to a partition and the finality depth below the head, and a token's holders page at
 * the head adds up every holding changed since. For the busiest tokens that is most of their
 * holdings: at M the heaviest token changed all 2,062 of them in its last partition, and its
 * page cost 10-14 ms against 2-3.5 read from ranks at the page's own block (BENCHMARKS.md
 * "eighteenth figures"). So for the tokens with many holdings changed after the ranks' block, a
 * second entry ranks every holding as of a block near the head: their ranked rows plus the changes
 * in the index files after them, summed and ranked again (at M 99 tokens, 634,413 holdings, in
 * 5.4 s, where ranking every token takes 22.6: cheap enough to redo every few blocks). Written in
 * HEAD_RANKS, laid out as the ranks are (parts by token, groups of RANK_ROW_GROUP_SIZE), with the
 * tokens listed in the entry; no wallet records (a wallet's own changes are few). A page of one of
 * those tokens at their block reads their rows (2.7-2.9 ms at M, against 14-16 summed), after it
 * their rows plus the few changes since, while those are few (query/holders.ts; BENCHMARKS.md
 * "nineteenth figures").
 *
 * The same rules of use as the ranks': its block must still end a chunk with the same hash, and no
 * index file may span it. A compaction of the follower's head chunks spans it within a few dozen
 * blocks, so it is rebuilt as the indexed chain moves (headRanksDue), in the background merges
 * after every other merge.
 */

/**
 * A token goes into head ranks with at least this many holdings changed after the ranks' block
 * (or CHAINLAKE_HEAD_RANKS_MIN_CHANGES: tests, whose chains have no such token).
 */
export const HEAD_RANKS_MIN_CHANGES = 1_024;
const minChangesDefault = () => Number(process.env.CHAINLAKE_HEAD_RANKS_MIN_CHANGES) || HEAD_RANKS_MIN_CHANGES;
/** At most this many tokens (the most changed first): the build stays a small fraction of the ranks'. */
export const HEAD_RANKS_MAX_TOKENS = 256;
/**
 * Head ranks are rebuilt once the indexed chain is this many blocks past them, or one block per
 * HEAD_RANKS_ROWS_PER_BLOCK of their rows if more: their build costs about 8.5 µs a row (M: 634,413
 * rows of 99 tokens in 5.4 s, BENCHMARKS.md "nineteenth figures"), so a rebuild costs at most about
 * 0.7 s a block, under 6% of a core on a chain of 12-second blocks, at any size.
 */
export const HEAD_RANKS_EVERY = 8;
export const HEAD_RANKS_ROWS_PER_BLOCK = 80_000;

/** A head ranks entry (its tokens listed). */
export type HeadRanks = RankEntry & { tokens: Record<string, number> };

const usable: PerState<HeadRanks | null> = new WeakMap();

export interface HeadRankOptions {
	/** HEAD_RANKS_MIN_CHANGES by default. */
	minChanges?: number;
	/** HEAD_RANKS_EVERY by default. */
	every?: number;
	/** Built at the last indexed chunk's end at or below this block (default: the last indexed chunk's). */
	through?: number;
}

/**
 * The listed head ranks, if readers can use them with manifest `m`: the chain still starts where
 * they do and they still stand at their block (standsAt). (The chunks before their block need not
 * be indexed any more: the ranks hold those balances.) Once per manifest state: each holders page
 * asks.
 */
export function usableHeadRanks(dataDir: string, m: Manifest | null): HeadRanks | null {
	const h = headRanksOf(m);
	if (!m || !h?.tokens || m.chunks.length === 0) return null;
	return perManifestState(usable, m, () => {
		const first = Math.min(...m.chunks.map((c) => c.from));
		return first === h.from && standsAt(dataDir, m, h) ? (h as HeadRanks) : null;
	});
}

/** Where head ranks would be built now: the indexed chain's end, if past usable holder ranks. */
function headRankable(dataDir: string, m: Manifest, through?: number): { ranks: RankEntry; at: RangeId } | null {
	const ranks = usableRanks(dataDir, m);
	const at = indexedChain(m, through);
	return ranks && at && at.from === ranks.from && at.to > ranks.to ? { ranks, at } : null;
}

/**
 * Whether head ranks should be (re)built: there are usable holder ranks with indexed chunks after
 * them, and the listed head ranks are unusable, no later than the ranks, or far enough behind the
 * indexed chain (HEAD_RANKS_EVERY).
 */
export function headRanksDue(dataDir: string, m: Manifest, options: HeadRankOptions = {}): boolean {
	const next = headRankable(dataDir, m, options.through);
	if (!next) return false;
	const h = usableHeadRanks(dataDir, m);
	const every = options.every ?? Math.max(HEAD_RANKS_EVERY, Math.ceil((h?.rows ?? 0) / HEAD_RANKS_ROWS_PER_BLOCK));
	return !h || h.to <= next.ranks.to || next.at.to - h.to >= every;
}

/**
 * SQL of the tokens with at least `min` holdings changed in the holders index files `files`,
 * the most changed first, at most HEAD_RANKS_MAX_TOKENS.
 */
const busyTokensSql = (files: readonly string[], min: number): string =>
	`SELECT token FROM read_parquet([${files.map(sqlString).join(", ")}]) GROUP BY token
	 HAVING count(DISTINCT address) >= ${Math.max(1, Math.floor(min))} ORDER BY count(DISTINCT address) DESC, token
	 LIMIT ${HEAD_RANKS_MAX_TOKENS}`;

/**
 * Writes head ranks at the indexed chain's end, if due (headRanksDue), and lists them in one save
 * in place of the previous ones. Returns the files the save unlisted (for the caller to retire),
 * or null when none was due.
 */
export async function headRanksStep(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	exclusive: <T>(commit: () => Promise<T>) => Promise<T> = (commit) => commit(),
	options: HeadRankOptions = {},
): Promise<string[] | null> {
	if (!headRanksDue(dataDir, m, options)) return null;
	const { ranks, at } = headRankable(dataDir, m, options.through) as { ranks: RankEntry; at: RangeId };
	// Every index file after the ranks' block lies wholly after it (the ranks are usable) and ends
	// by the indexed chain's end (the chunks after it have no index file).
	const later = indexFiles(dataDir, m, "erc20_holders", [ranks.to + 1, at.to]).flatMap((f) =>
		partPaths(f.path, f.parts),
	);
	const tokens = (await writer.select(busyTokensSql(later, options.minChanges ?? minChangesDefault())))
		.map((r) => String(r.token))
		.sort();
	const entry: RankEntry = { ...at, gen: nextGeneration(m), rows: 0, rankParts: 0, tokens: {} };
	const path = rankPath(dataDir, m.chain, entry, HEAD_RANKS);
	if (tokens.length > 0) {
		// Their ranked rows and their changes after them, each a holding's limbs, summed and ranked again.
		const list = tokens.map(sqlString).join(", ");
		const cols = `token, address, ${LIMBS.join(", ")}, last_block`;
		// (Only the ranks' parts the tokens fall in: at L the ranks are 1,024 parts.)
		const parts = rankTablesOf(ranks).find(([t]) => t === RANKS)?.[1] ?? 1;
		const ranked = new Set(tokens.map((t) => partPath(rankPath(dataDir, m.chain, ranks, RANKS), partOf(t, parts))));
		const rows = `SELECT ${cols} FROM read_parquet([${[...ranked].map(sqlString).join(", ")}]) WHERE token IN (${list})
			UNION ALL SELECT ${cols} FROM read_parquet([${later.map(sqlString).join(", ")}]) WHERE token IN (${list})`;
		// In one file first, then in parts by token (as the ranks are); a crash leaves files no
		// manifest lists, which the next writer's start removes.
		const whole = path.replace(/\.parquet$/, ".whole.parquet");
		try {
			entry.rows = await writer.copy(rankedSql(rows), whole, RANK_COPY_OPTIONS);
			entry.rankParts = await writeRankParts(writer, whole, path, entry.rows);
			// Each token's holdings there (a page chooses between them and summing by it: query/holders.ts).
			for (const r of await writer.select(
				`SELECT token, count(*) AS n FROM read_parquet(${sqlString(whole)}) GROUP BY token`,
			))
				(entry.tokens as Record<string, number>)[String(r.token)] = Number(r.n);
		} finally {
			await rm(whole, { force: true });
		}
	}
	crashPoint("head-ranks.written");
	const written = partPaths(path, entry.rankParts);
	return exclusive(async () => {
		// A reorg or a compaction may have ended the chunk at their block meanwhile: then they are dropped.
		if (!m.chunks.some((c) => c.to === entry.to && c.last_hash === entry.last_hash)) return written;
		const old = headRanksOf(m);
		m.ranks = [...(m.ranks ?? []).filter((r) => r !== old), entry];
		await saveManifest(dataDir, m);
		return old ? rankFiles(dataDir, { ...m, ranks: [old] }) : [];
	});
}
