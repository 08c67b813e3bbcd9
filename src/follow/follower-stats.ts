import type { RpcHealth } from "../rpc/rpc-health.js";
import type { LakeExportStatus } from "../store/delta/save-manifest.js";

/*
 * What a follower tells about itself: its figures (kept up to date in place by the follower) and
 * what it exposes for /metrics and /readyz. Defined here, where the figures are born; the API's
 * metrics and health routes and the status file read them.
 */

export interface FollowerStats {
	nodeHead: number | null;
	storedHead: number | null;
	blocksIngested: number;
	reorgs: number;
	faults: number;
	lastStepAt: number | null;
	/** The latest failed or refused step, for readiness. */
	lastFault: { at: number; message: string } | null;
	/** The node as this follower's RPC client sees it (errors retried within steps included). */
	node: RpcHealth;
	/**
	 * Another process holds the chain's write lock (its message), so this one stands by: it
	 * takes over at the first poll after that writer stops. Null while this one writes.
	 */
	standby: string | null;
}

/** What a follower exposes for /metrics and /readyz. */
export interface FollowSource {
	stats: FollowerStats;
	rpcErrors: Record<string, number>;
	/** The Delta Lake export's failures, where they are another process's (its status file). */
	deltaExport?: LakeExportStatus;
}
