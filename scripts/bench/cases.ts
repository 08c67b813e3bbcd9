import { BLOCK_COLUMNS, findBlockByHash, findBlockByNumber, listBlocks } from "../../src/query/blocks.js";
import { findCreations } from "../../src/query/contracts.js";
import type { Page } from "../../src/query/list.js";
import type { Snapshot } from "../../src/query/store/store.js";
import { findTransaction, findWalletTransactions, LOG_COLUMNS, TX_COLUMNS } from "../../src/query/transactions.js";
import { findTransfers, TRANSFER_COLUMNS } from "../../src/query/transfers.js";
import type { SynthTargets } from "../../src/synth/targets.js";

/**
 * One benchmark question, asked three ways of the same data: over HTTP (`path`), straight
 * through our query layer on DuckDB (`duckdb`, the floor for our own overhead), and as the
 * SQL a Postgres-backed explorer would run (`pg`).
 */
export interface BenchCase {
	name: string;
	/** Point lookups and range scans are judged against Postgres differently (the issue's targets). */
	kind: "point" | "list" | "range";
	path: string;
	duckdb(db: Snapshot): Promise<unknown>;
	pg: { text: string; values: unknown[] };
}

const ALL_ASSETS = ["native", "ft", "nft"] as const;
const LIMIT = 100;

/** A page as the API resolves it: whole history unless narrowed, ascending, limit 100. */
const page = (t: SynthTargets, over: Partial<Page> = {}): Page => ({
	start: 0,
	end: t.head,
	limit: LIMIT,
	order: "asc",
	...over,
});

/** The explorer's wallet query: one index scan per side, merged (an OR would sort every match). */
const pgWallet = (table: string, cols: string, a: string, b: string, after = "") => `
	SELECT * FROM (
		(SELECT ${cols} FROM ${table} WHERE ${a} = $1 AND block_number BETWEEN $2 AND $3 ${after} ORDER BY id LIMIT ${LIMIT + 1})
		UNION ALL
		(SELECT ${cols} FROM ${table} WHERE ${b} = $1 AND ${a} IS DISTINCT FROM $1 AND block_number BETWEEN $2 AND $3 ${after} ORDER BY id LIMIT ${LIMIT + 1})
	) u ORDER BY id LIMIT ${LIMIT + 1}`;

/**
 * A transaction with its logs, as /txs/{hash} answers it (our records hold both): one round trip,
 * the transaction by its index, then its logs by theirs, a row per log. (The figures in
 * BENCHMARKS.md before the fifteenth asked PostgreSQL for the transaction alone.)
 */
const PG_TX_WITH_LOGS = `
	SELECT t.*, ${LOG_COLUMNS.split(", ")
		.map((c) => `l.${c} AS log_${c}`)
		.join(", ")}
	FROM (SELECT ${TX_COLUMNS} FROM transactions WHERE transaction_hash = $1) t
	LEFT JOIN LATERAL (SELECT ${LOG_COLUMNS} FROM logs WHERE logs.transaction_hash = t.transaction_hash ORDER BY log_index) l ON true`;

export function benchCases(t: SynthTargets): BenchCase[] {
	const cases: BenchCase[] = [];
	const mid = Math.floor(t.head / 2);
	const midId = `${mid.toString(16).padStart(16, "0")}-0000-00000000`;
	for (const tier of ["heavy", "median", "cold"] as const) {
		const a = t.addresses[tier][0]?.value as string;
		cases.push({
			name: `wallet transfers, ${tier}, whole history`,
			kind: "list",
			path: `/address/${a}/transfers?asset_type=native,ft,nft&limit=${LIMIT}`,
			duckdb: (db) => findTransfers(db, { address: a, assets: [...ALL_ASSETS] }, page(t)),
			pg: { text: pgWallet("transfers", TRANSFER_COLUMNS, "sender", "recipient"), values: [a, 0, t.head] },
		});
	}
	const heavy = t.addresses.heavy[0]?.value as string;
	cases.push({
		name: "wallet transfers, heavy, last 1000 blocks",
		kind: "list",
		path: `/address/${heavy}/transfers?asset_type=native,ft,nft&block_number_start=-1000&block_number_end=latest&limit=${LIMIT}`,
		duckdb: (db) => findTransfers(db, { address: heavy, assets: [...ALL_ASSETS] }, page(t, { start: t.head - 1000 })),
		pg: {
			text: pgWallet("transfers", TRANSFER_COLUMNS, "sender", "recipient"),
			values: [heavy, t.head - 1000, t.head],
		},
	});
	cases.push({
		name: "wallet transfers, heavy, deep page (offset mid-history)",
		kind: "list",
		path: `/address/${heavy}/transfers?asset_type=native,ft,nft&offset=${midId}&limit=${LIMIT}`,
		duckdb: (db) => findTransfers(db, { address: heavy, assets: [...ALL_ASSETS] }, page(t, { after: midId })),
		pg: {
			text: pgWallet("transfers", TRANSFER_COLUMNS, "sender", "recipient", "AND id > $4"),
			values: [heavy, 0, t.head, midId],
		},
	});
	cases.push({
		name: "wallet transfers, heavy, newest first",
		kind: "list",
		path: `/address/${heavy}/transfers?asset_type=native,ft,nft&order=desc&limit=${LIMIT}`,
		duckdb: (db) => findTransfers(db, { address: heavy, assets: [...ALL_ASSETS] }, page(t, { order: "desc" })),
		pg: {
			text: pgWallet("transfers", TRANSFER_COLUMNS, "sender", "recipient").replaceAll(
				"ORDER BY id",
				"ORDER BY id DESC",
			),
			values: [heavy, 0, t.head],
		},
	});
	for (const tier of ["heavy", "median", "cold"] as const) {
		const a = t.txAccounts[tier][0]?.value as string;
		cases.push({
			name: `wallet txs, ${tier}, whole history`,
			kind: "list",
			path: `/address/${a}/txs?limit=${LIMIT}`,
			duckdb: (db) => findWalletTransactions(db, { address: a }, page(t)),
			pg: { text: pgWallet("transactions", TX_COLUMNS, "from_address", "to_address"), values: [a, 0, t.head] },
		});
	}
	const tx = t.txHashes[0] as string;
	cases.push({
		name: "tx by hash",
		kind: "point",
		path: `/txs/${tx}`,
		duckdb: (db) => findTransaction(db, tx),
		pg: { text: PG_TX_WITH_LOGS, values: [tx] },
	});
	const missingTx = t.missingTxHashes[0] as string;
	cases.push({
		name: "tx by hash, missing (404)",
		kind: "point",
		path: `/txs/${missingTx}`,
		duckdb: (db) => findTransaction(db, missingTx),
		pg: { text: PG_TX_WITH_LOGS, values: [missingTx] },
	});
	const blockHash = t.blockHashes[0] as string;
	cases.push({
		name: "block by hash",
		kind: "point",
		path: `/blocks/${blockHash}`,
		duckdb: (db) => findBlockByHash(db, blockHash),
		pg: { text: `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE hash = $1`, values: [blockHash] },
	});
	cases.push({
		name: "latest block",
		kind: "point",
		path: "/blocks/latest",
		duckdb: (db) => findBlockByNumber(db, t.head),
		pg: { text: `SELECT ${BLOCK_COLUMNS} FROM blocks ORDER BY number DESC LIMIT 1`, values: [] },
	});
	cases.push({
		name: "block range, 1000 blocks",
		kind: "range",
		path: "/blocks?block_number_start=-999&block_number_end=latest&limit=1000",
		duckdb: (db) => listBlocks(db, { start: t.head - 999, end: t.head, limit: 1000, order: "asc" }),
		pg: {
			text: `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE number BETWEEN $1 AND $2 ORDER BY number LIMIT 1001`,
			values: [t.head - 999, t.head],
		},
	});
	for (const tier of ["heavy", "median"] as const) {
		const f = t.factories[tier][0]?.value as string;
		cases.push({
			name: `contract creations by caller, ${tier}`,
			kind: "list",
			path: `/contracts/creates?caller=${f}&limit=${LIMIT}`,
			duckdb: (db) => findCreations(db, { caller: f }, page(t)),
			pg: {
				text: `SELECT * FROM contract_creations WHERE caller = $1 AND block_number BETWEEN $2 AND $3 ORDER BY id LIMIT ${LIMIT + 1}`,
				values: [f, 0, t.head],
			},
		});
	}
	// The busiest token, and a median one (its few transfers spread over the chain's history).
	for (const [label, token] of [
		["the busiest token", t.tokens.heavy[0]?.value as string],
		["a median token", t.tokens.median[0]?.value as string],
	] as const)
		cases.push({
			name: `token transfers of ${label}`,
			kind: "list",
			path: `/contract/${token}/transfers?asset_type=ft,nft&limit=${LIMIT}`,
			duckdb: (db) => findTransfers(db, { token, assets: ["ft", "nft"] }, page(t)),
			pg: {
				text: `SELECT ${TRANSFER_COLUMNS} FROM transfers WHERE contract = $1 AND block_number BETWEEN $2 AND $3 ORDER BY id LIMIT ${LIMIT + 1}`,
				values: [token, 0, t.head],
			},
		});
	return cases;
}
