/**
 * The one module that talks to DuckDB for the API. Reads the Parquet files in place (no import
 * step): each `{dataset}` in a statement becomes `read_parquet($files_i)` over the files the chain's
 * manifest lists, so ranges a backfill appends are seen by the next query and a crashed run's
 * leftovers never are. Prepared statements are cached per connection, the file lists bound as
 * their parameters.
 * DuckDB can reach no file outside `dataDir` (see lockDown), and no query runs past its budget.
 *
 * This file puts the store together from its parts, each in a file of its own beside it: the
 * connection pool, the manifests, the files' health, the placeholders, the key filters, the query
 * runner, the holder-ranks counts, the memo, the block stamps and the chains listing.
 */
import { DuckDBInstance } from "@duckdb/node-api";
import { manifestPath } from "../../store/format/layout.js";
import { listedFiles } from "../../store/format/manifest.js";
import type { Manifest } from "../../store/format/records.js";
import { SETTLE_DEPTH } from "../../store/format/run-lookup.js";
import { usableHeadRanks } from "../../store/holdings/head-ranks.js";
import { RANKS_MIN_HOLDINGS, usableRanks } from "../../store/holdings/holder-ranks.js";
import { isIndexed } from "../../store/indexes/listing.js";
import { lockDown } from "../lock-down.js";
import { blockStamps } from "./block-stamps.js";
import { chainListing } from "./chain-listing.js";
import { openConnectionPool } from "./connection-pool.js";
import { fileHealth } from "./file-health.js";
import { keyFilters } from "./key-filters.js";
import { lookupDbs } from "./lookup-dbs.js";
import { manifestMemo } from "./manifest-memo.js";
import { manifestStates } from "./manifest-states.js";
import { placeholderExpander } from "./placeholder-expander.js";
import { rankedCounts } from "./ranked-counts.js";
import { queryRunner } from "./run-query.js";
import type { ChainState, Store } from "./store.js";
import {
	DEFAULT_MEMORY_LIMIT,
	DEFAULT_QUERY_TIMEOUT_MS,
	DEFAULT_THREADS,
	SNAPSHOT_MAX_AGE_MS,
	type StoreOptions,
} from "./store-options.js";

export async function createStore(dataDir: string, options: StoreOptions = {}): Promise<Store> {
	const budgetMs = options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
	const maxAgeMs = options.snapshotMaxAgeMs ?? SNAPSHOT_MAX_AGE_MS;
	// setTimeout fires at once for delays past 2^31-1 ms: refuse what it cannot time.
	if (!Number.isInteger(budgetMs) || budgetMs < 1 || budgetMs > 2 ** 31 - 1) {
		throw new Error(`queryTimeoutMs must be a whole number of milliseconds from 1 to ${2 ** 31 - 1}, got ${budgetMs}`);
	}
	const instance = await DuckDBInstance.create(":memory:", {
		threads: String(options.threads ?? DEFAULT_THREADS),
		memory_limit: options.memoryLimit ?? DEFAULT_MEMORY_LIMIT,
	});
	await lockDown(instance, dataDir);
	const pool = await openConnectionPool(instance);

	const health = fileHealth(dataDir, options);
	const { manifestState, manifestOf, snapshotOf } = manifestStates(dataDir, health.sweep);
	const keys = keyFilters(dataDir, options);
	// A reader over a bucket reads the Parquet parts it fetches, never a lookup database.
	const dbs = options.files ? undefined : lookupDbs(dataDir);
	const expand = placeholderExpander(dataDir, keys.filters, dbs);
	const run = queryRunner({ budgetMs, maxAgeMs, options, pool, health, keys, expand, dbs });
	const ranksMinHoldings = options.ranksMinHoldings ?? RANKS_MIN_HOLDINGS;
	const ranked = rankedCounts(dataDir, options, budgetMs, run);
	const memo = manifestMemo();
	const stamps = blockStamps(options.maxStampedBlocks);
	const { chains, has } = chainListing(dataDir);

	// Per manifest object (a changed manifest is a new one): its generation and final block.
	const states = new WeakMap<Manifest, ChainState>();
	const stateOf = (manifest: Manifest): ChainState => {
		let state = states.get(manifest);
		if (!state) {
			const tip = manifest.chunks.length > 0 ? Math.max(...manifest.chunks.map((c) => c.to)) : null;
			const final = manifest.final_through ?? (tip === null ? null : tip - SETTLE_DEPTH);
			state = { generation: manifest.generation ?? 0, final };
			states.set(manifest, state);
		}
		return state;
	};
	const known = (chain: string) => {
		if (!has(chain)) throw new Error(`unknown chain ${chain}`);
	};

	return {
		chains,
		serves: has,
		hasDataset: (chain, dataset) => listedFiles(dataDir, manifestOf(chain), dataset).length > 0,
		async query(chain, sql, params = {}) {
			known(chain);
			return run(snapshotOf(chain), sql, params, { leftMs: budgetMs, since: performance.now() });
		},
		snapshot(chain) {
			known(chain);
			const manifest = snapshotOf(chain);
			const budget = { leftMs: budgetMs, since: performance.now() };
			return {
				chain,
				hasDataset: (dataset) => listedFiles(dataDir, manifest, dataset).length > 0,
				query: (sql, params = {}, window, key) => run(manifest, sql, params, budget, window, key),
				indexed: (index, chunk) => manifest !== null && isIndexed(manifest, index, chunk),
				keyRows: (index, key, window) => keys.keyRows(manifest, index, key, window),
				blockStamps: (blocks) =>
					stamps(chain, manifest, blocks, (sql, params, window) => run(manifest, sql, params, budget, window)),
				ranks: () => usableRanks(dataDir, manifest),
				headRanks: () => usableHeadRanks(dataDir, manifest),
				ranked: async (token) =>
					ranksMinHoldings <= 0 || ((await ranked(manifest)).get(token) ?? 0) >= ranksMinHoldings,
				chunks: () => [...(manifest?.chunks ?? [])].sort((a, b) => a.from - b.from),
				manifest: () => manifest,
				partitionSize: () => manifest?.partition_size,
				// The manifest's last block: the head, without reading a file.
				head: () => (manifest?.chunks.length ? Math.max(...manifest.chunks.map((c) => c.to)) : null),
				memo: (key, compute) => memo(manifest, key, compute),
				// The runner takes each statement's time off the budget (run-query.ts).
				queryMs: () => budgetMs - budget.leftMs,
			};
		},
		async damage(chain) {
			const manifest = manifestOf(chain);
			if (!manifest) return [];
			return health.damage(chain, manifest);
		},
		manifestProblem: (chain) => manifestState(chain).problem,
		manifestFile: (chain) => manifestPath(dataDir, chain),
		state(chain) {
			if (!has(chain)) return null;
			const { manifest } = manifestState(chain);
			return manifest ? stateOf(manifest) : null;
		},
		stateOf,
		close() {
			pool.close();
			instance.closeSync();
		},
	};
}
