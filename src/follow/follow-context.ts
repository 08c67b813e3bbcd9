import type { createRangeFetcher } from "../backfill/fetch-range.js";
import type { RpcClient } from "../rpc/client.js";
import type { TraceFormat } from "../rpc/types.js";
import type { ParquetWriter } from "../store/files/parquet-writer.js";
import type { ChunkEntry, Manifest } from "../store/format/records.js";
import type { ChainRef } from "../util/chain.js";
import type { Logger } from "../util/logger.js";
import type { FollowerOptions } from "./follower-options.js";
import type { FollowerStats } from "./follower-stats.js";

/*
 * What the follower's steps share (follower.ts makes them; append-blocks.ts, unwind-reorg.ts,
 * compact-final.ts and open-state.ts use them): the follower's settings and tools, the state of
 * a run that holds the chain's write lock, and the events a step reports.
 */

export type FollowEvent =
	| { type: "blocks"; from: number; to: number }
	| { type: "reorg"; ancestor: number; orphaned: string[] }
	| { type: "compact"; from: number; to: number; files: number }
	| { type: "fault"; message: string };

/** One follower's settings and tools, fixed when it is created. */
export interface FollowContext {
	rpc: RpcClient;
	chain: ChainRef;
	dataDir: string;
	logger: Logger;
	opts: FollowerOptions;
	/** Blocks this deep below the head are final (opts.finalityDepth or its default). */
	finality: number;
	partitionSize: number;
	fetcher: ReturnType<typeof createRangeFetcher>;
	stats: FollowerStats;
	/** Deletes `files` (just unlisted) after the grace, or at `due` (retire-files.ts). */
	retire: (files: string[], due?: number) => void;
}

/** A run that holds the chain's write lock: its manifest, writer and trace source. */
export interface FollowState {
	manifest: Manifest;
	writer: ParquetWriter;
	traces: TraceFormat | null;
	unlock: () => void;
	/** Check the files it reads itself for damage at the next step (at start, and after a read error). */
	recheck: boolean;
	/** Chunks with a damaged file, to fetch again. */
	damaged: ChunkEntry[];
}

/** The manifest's chunks by first block. */
export const sortedChunks = (m: Manifest) => [...m.chunks].sort((a, b) => a.from - b.from);
/** The stored chunk that ends highest. */
export const tipOf = (m: Manifest) => sortedChunks(m).at(-1);
/**
 * Notes, in the manifest about to be saved, that stored blocks up to `n` are final now. From a
 * follower's first save on, even while no block is final yet (-1: a chain younger than the
 * finality depth): the mark also says a follower keeps the folder, which writers read
 * (holder-ranks.ts ranks only settled chunks then).
 */
export const markFinal = (m: Manifest, n: number) => {
	const mark = Math.max(n, -1);
	if (m.final_through === undefined || mark > m.final_through) m.final_through = mark;
};
