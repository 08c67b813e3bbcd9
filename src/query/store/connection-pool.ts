/**
 * The store's DuckDB connections, each with its prepared statements, handed out in the order the
 * requests began: apart from the rest of the store because the queue's order is a rule of its own
 * (see acquire), and the runner (run-query.ts) only takes and gives back.
 */
import type { DuckDBConnection, DuckDBInstance, DuckDBPreparedStatement } from "@duckdb/node-api";

/** Connections kept open: DuckDB runs one query per connection at a time, and parallelises inside a query too. */
const POOL_SIZE = 4;

/** A connection and its prepared statements (by their text). */
export type Pooled = { conn: DuckDBConnection; prepared: Map<string, DuckDBPreparedStatement> };

export interface ConnectionPool {
	/** A free connection, at once or when one of the requests that began before `since` gave its back. */
	acquire(since: number): Promise<Pooled>;
	/** Gives `c` to the request waiting longest, or back to the idle ones. */
	release(c: Pooled): void;
	/** Closes the idle connections and their statements. */
	close(): void;
}

export async function openConnectionPool(instance: DuckDBInstance): Promise<ConnectionPool> {
	const idle: Pooled[] = [];
	for (let i = 0; i < POOL_SIZE; i++) idle.push({ conn: await instance.connect(), prepared: new Map() });
	// Waiting queries in the order their requests (snapshots) began, not the order they asked:
	// a request's second or third query (list windows) goes ahead of requests that came later,
	// so under load a request waits about as long as the queue was when it arrived, instead of
	// once more at the back for every query it runs.
	const waiting: { since: number; take: (c: Pooled) => void }[] = [];
	const acquire = (since: number) =>
		new Promise<Pooled>((take) => {
			const c = idle.pop();
			if (c) return take(c);
			const w = { since, take };
			let i = waiting.length;
			while (i > 0 && (waiting[i - 1] as (typeof waiting)[number]).since > since) i--;
			waiting.splice(i, 0, w);
		});
	const releaseConnection = (c: Pooled) => {
		const next = waiting.shift();
		if (next) next.take(c);
		else idle.push(c);
	};
	return {
		acquire,
		release: releaseConnection,
		close() {
			for (const c of idle) {
				for (const s of c.prepared.values()) s.destroySync();
				c.conn.closeSync();
			}
		},
	};
}
