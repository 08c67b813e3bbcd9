import { DuckDBInstance } from "@duckdb/node-api";
import { type BackfillRun, createBackfill } from "../../src/backfill/backfill.js";
import { viewsSql } from "../../src/query/views.js";
import { createRpcClient } from "../../src/rpc/client.js";
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
