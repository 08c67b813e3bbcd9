import { cp } from "node:fs/promises";
import { DuckDBInstance } from "@duckdb/node-api";
import { type BackfillRun, createBackfill } from "../../src/backfill/backfill.js";
import { viewsSql } from "../../src/query/views.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { saveManifest } from "../../src/store/delta/save-manifest.js";
import { DEFERRED } from "../../src/store/format/indexes.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { unsettledChunks } from "../../src/store/indexes/runs.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";

/** Runs the backfill in-process against `rpcUrl`, logging into memory. */
export async function backfillInto(dataDir: string, rpcUrl: string, chainId: number, run: Partial<BackfillRun> = {}) {
	const logger = createMemoryLogger();
	const rpc = createRpcClient({ urls: [rpcUrl], logger });
	const backfill = createBackfill({ rpc, chain: parseChainId(`eip155-${chainId}`), dataDir, logger });
	const summary = await backfill.run({ from: 0, to: "latest", traces: "auto", ...run });
	return { summary, logger };
}

/**
 * A copy of folder `from` whose chunks not yet settled list no balance delta files: a follower's
 * state between a head block's commit and the background step that derives them
 * (src/store/merges.ts headStep), in which balances sum those chunks' transfers instead.
 * Returns how many chunks lost them (so a test can tell it tested something).
 */
export async function copyWithoutHeadDeltas(from: string, to: string, chainId: number): Promise<number> {
	await cp(from, to, { recursive: true });
	const m = await loadManifest(to, `eip155-${chainId}`, chainId);
	let unlisted = 0;
	for (const c of unsettledChunks(m)) {
		if (!c.indexes?.some((i) => DEFERRED.includes(i))) continue;
		c.indexes = c.indexes.filter((i) => !DEFERRED.includes(i));
		unlisted++;
	}
	await saveManifest(to, m);
	return unlisted;
}

/** A DuckDB connection with one view per dataset over the chain's files (npm run sql's views). */
export async function openViews(dataDir: string, chainId: number) {
	const db = await DuckDBInstance.create(":memory:");
	const conn = await db.connect();
	await conn.run(viewsSql(dataDir, `eip155-${chainId}`));
	return {
		async rows(sql: string, params: Record<string, string | number> = {}): Promise<Record<string, unknown>[]> {
			const r = await conn.runAndReadAll(sql, params);
			return r.getRowObjectsJson() as Record<string, unknown>[];
		},
		close() {
			conn.closeSync();
			db.closeSync();
		},
	};
}
