import type { RpcClient } from "../rpc/client.js";
import type { TraceMode } from "../rpc/detect-traces.js";
import type { LakeSettings } from "../store/format/records.js";
import { RETIRE_GRACE_MS } from "../store/retire/retire-later.js";
import type { ChainRef } from "../util/chain.js";
import type { Logger } from "../util/logger.js";

/*
 * A follower's settings and their defaults, in one place: what `npm run follow`, `serve
 * --follow` and `npm start` pass to createFollower (follower.ts).
 */

/** Blocks this deep below the head are final: no reorg may reach them; their files are compacted. */
export const DEFAULT_FINALITY_DEPTH = 12;
/** Replaced files (reorged out, compacted) are deleted this long after the switch, so requests
 * that began on the previous file list can finish, in any process (with the Delta export on,
 * its retention keeps them longer still). */
export const DEFAULT_DELETE_GRACE_MS = RETIRE_GRACE_MS;
/** The longest wait between polls while the data folder's disk is full. */
export const DISK_FULL_MAX_BACKOFF_MS = 30_000;
/**
 * The longest wait before a step or a merge that met a damaged listed file it cannot fix tries
 * again (damage-backoff.ts): the repair is an operator's, so minutes are fine, and a retry costs
 * little (the read fails at the file's footer).
 */
export const DAMAGE_MAX_BACKOFF_MS = 300_000;
/**
 * The follower's merge windows in a partition not yet complete are COMPACT_FAN_IN blocks, then
 * COMPACT_FAN_IN^2, ... (compact-final.ts): 32 by default, so a block is rewritten twice (its
 * window, then its partition), as before windows; the demo takes 4 (4, 16, 64, 256: fewer, larger
 * files).
 */
export const DEFAULT_COMPACT_FAN_IN = 32;

export interface FollowerOptions {
	rpc: RpcClient;
	chain: ChainRef;
	dataDir: string;
	logger: Logger;
	traces?: TraceMode;
	finalityDepth?: number;
	partitionSize?: number;
	/** Where to begin when nothing is stored yet (default 0: the whole history). */
	startBlock?: number;
	concurrency?: number;
	pollMs?: number;
	/** How long replaced files stay on disk for readers that began before the switch (default 5 minutes). */
	deleteGraceMs?: number;
	/** The smallest merge window of final head files, in blocks (DEFAULT_COMPACT_FAN_IN; at least 2). */
	compactFanIn?: number;
	/** The Delta Lake export's settings (delta/lake-flags.ts); kept in the manifest. */
	lake?: Partial<LakeSettings>;
}
