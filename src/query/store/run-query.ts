/**
 * Runs one statement of a snapshot: its placeholders expanded, its files checked against the
 * known damage and held (from a bucket), a pooled connection taken in request order, and DuckDB
 * interrupted past the time budget. Apart from the store's set-up because this is the one path
 * every query takes, and its order of steps is what keeps the budget and the snapshot's files safe.
 */
import { type DuckDBPreparedStatement, listValue } from "@duckdb/node-api";
import type { Manifest } from "../../store/format/records.js";
import { QueryTimeoutError } from "../query-timeout-error.js";
import { UnavailableError } from "../unavailable-error.js";
import type { ConnectionPool } from "./connection-pool.js";
import type { FileHealth } from "./file-health.js";
import type { KeyFilters } from "./key-filters.js";
import type { LookupDbs } from "./lookup-dbs.js";
import { type FilesRead, fileListParam, type placeholderExpander } from "./placeholder-expander.js";
import { resultRows } from "./result-rows.js";
import type { Params, Row } from "./store.js";
import type { StoreOptions } from "./store-options.js";

/** Prepared statements kept per connection (a few per route and filter combination). */
const MAX_PREPARED = 256;

/** What is left of a query's or a snapshot's time budget, in ms. */
export type Budget = { leftMs: number; since: number };

export type RunQuery = (
	manifest: Manifest | null,
	sql: string,
	params: Params,
	budget: Budget,
	window?: readonly [number, number],
	key?: string,
) => Promise<Row[]>;

/**
 * `budgetMs`: a query's (or a snapshot's) whole budget, named in QueryTimeoutError; `maxAgeMs`:
 * how long after its snapshot a request may still start a query (SNAPSHOT_MAX_AGE_MS).
 */
export function queryRunner(parts: {
	budgetMs: number;
	maxAgeMs: number;
	options: Pick<StoreOptions, "files">;
	pool: ConnectionPool;
	health: FileHealth;
	keys: KeyFilters;
	expand: ReturnType<typeof placeholderExpander>;
	/** The lookup databases the expander names, attached here before a statement reads them. */
	dbs?: LookupDbs;
}): RunQuery {
	const { budgetMs, maxAgeMs, options, pool, health, expand } = parts;
	const { loadFilters, filtersOf } = parts.keys;
	const { damagedFiles, damagedError, damageBehind } = health;
	const run: RunQuery = async (manifest, sql, params, budget, window, key) => {
		if (key !== undefined) await loadFilters(filtersOf(manifest, sql, window));
		const read: FilesRead & { paths: string[] } = { files: 0, paths: [], lists: [] };
		let text = expand(manifest, sql, window, key, read);
		// A file known damaged: say so at once (DuckDB would fail on it, or read what is left).
		if (manifest && (health.damagedOf(manifest.chain)?.size ?? 0) > 0) {
			const bad = damagedFiles(manifest.chain, read.paths);
			if (bad.length > 0) throw damagedError(manifest.chain, bad);
		}
		// A key lookup whose every candidate file the filters ruled out: no rows, no query.
		if (key !== undefined && read.files === 0) return [];
		if (budget.leftMs <= 0) throw new QueryTimeoutError(budgetMs);
		// From a bucket: the files are fetched before a connection is taken (the fetch is not DuckDB
		// time), and kept until the query ends.
		let release = () => {};
		if (options.files)
			try {
				release = await options.files.hold(read.paths);
			} catch (err) {
				throw new UnavailableError(
					"LAKE_UNREACHABLE",
					`the lake's files could not be fetched from its bucket (${(err as Error).message.split("\n")[0]}): retry later`,
				);
			}
		const c = await pool.acquire(budget.since);
		// An older snapshot's request may read a database for as long as it may start and run a query.
		if (manifest && parts.dbs) await parts.dbs.sweep(c.conn, manifest, maxAgeMs + budgetMs);
		// A lookup database that cannot be attached (missing, damaged) is left for the Parquet parts
		// it copies: the statement is expanded again without it.
		if (read.dbs && parts.dbs && !(await parts.dbs.attach(c.conn, read.dbs))) {
			read.lists = [];
			text = expand(manifest, sql, window, key, read);
		}
		// (A reader over a bucket holds its files in the cache until the query ends, and the bucket
		// keeps replaced files for the lake's retention: a long fetch is no reason to refuse.)
		if (!options.files && performance.now() - budget.since > maxAgeMs) {
			release();
			pool.release(c);
			throw new UnavailableError(
				"BUSY",
				`the server is too busy: this request waited over ${maxAgeMs / 1000} s for a query slot; retry later`,
			);
		}
		const started = performance.now();
		// interrupt() stops the query running on this connection; the timer is cleared before the
		// connection goes back to the pool, so it never hits another request's query (and an
		// interrupt reaching a connection whose query just ended is a no-op).
		let interrupted = false;
		const timer = setTimeout(() => {
			interrupted = true;
			c.conn.interrupt();
		}, budget.leftMs);
		try {
			let stmt = c.prepared.get(text);
			if (!stmt) {
				stmt = await c.conn.prepare(text);
				c.prepared.set(text, stmt);
				// (The file lists are parameters: a statement's text is its shape, few per route.)
				if (c.prepared.size > MAX_PREPARED) {
					const [oldest, old] = c.prepared.entries().next().value as [string, DuckDBPreparedStatement];
					old.destroySync();
					c.prepared.delete(oldest);
				}
			}
			stmt.clearBindings();
			const bound: Params = { ...params };
			read.lists.forEach((files, i) => {
				bound[fileListParam(i)] = listValue(files);
			});
			if (Object.keys(bound).length > 0) stmt.bind(bound);
			return resultRows(await stmt.run());
		} catch (err) {
			if (interrupted) throw new QueryTimeoutError(budgetMs);
			throw (manifest && (await damageBehind(manifest.chain, read.paths, err))) || err;
		} finally {
			clearTimeout(timer);
			budget.leftMs -= performance.now() - started;
			release();
			pool.release(c);
		}
	};
	return run;
}
