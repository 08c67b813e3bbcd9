import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { listedFiles, readManifestSafe } from "../store/format/manifest.js";
import { sqlString as quote } from "../util/sql-string.js";

/**
 * What a benchmark should ask of a synthetic chain, picked from the data itself (not from the
 * generator's formulas), so every run of the bench asks the same questions of the same data.
 */
export interface SynthTargets {
	chain: string;
	head: number;
	/** Addresses by how many transfers they are in (as sender or recipient). */
	addresses: { heavy: Counted[]; median: Counted[]; cold: Counted[] };
	/** Accounts by how many transactions they sent or received. */
	txAccounts: { heavy: Counted[]; median: Counted[]; cold: Counted[] };
	txHashes: string[];
	missingTxHashes: string[];
	blockHashes: string[];
	missingBlockHashes: string[];
	/** Callers of contract creations: the busiest factory and a typical one. */
	factories: { heavy: Counted[]; median: Counted[] };
	/** Token contracts by transfer count. */
	tokens: { heavy: Counted[]; median: Counted[] };
}

export interface Counted {
	value: string;
	count: number;
}

export const targetsPath = (dataDir: string, chain: string) => join(dataDir, `${chain}.targets.json`);

const SAMPLE = 3;

export async function computeTargets(dataDir: string, chain: string): Promise<SynthTargets> {
	const m = readManifestSafe(dataDir, chain);
	const files = (d: Parameters<typeof listedFiles>[2]) =>
		`read_parquet([${listedFiles(dataDir, m, d).map(quote).join(", ")}])`;
	const instance = await DuckDBInstance.create(":memory:");
	const conn = await instance.connect();
	const rows = async (sql: string) => (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
	/**
	 * Heaviest, median and coldest values of a counted relation `(value, n)`. Ties (most wallets
	 * have as many rows as the median's or the coldest's) are broken by the value's md5, not the
	 * value: the lowest addresses all sat in an index file's first key-range part, so every quiet
	 * target read the same part (a part a bug had written in smaller groups than the others).
	 */
	const spread = async (counted: string) => {
		await conn.run(`CREATE OR REPLACE TEMP TABLE counted AS ${counted}`);
		const pick = async (order: string, where = "true") =>
			(await rows(`SELECT value, n FROM counted WHERE ${where} ORDER BY ${order}, md5(value) LIMIT ${SAMPLE}`)).map(
				(r) => ({
					value: String(r.value),
					count: Number(r.n),
				}),
			);
		const [med] = await rows("SELECT quantile_disc(n, 0.5) AS n FROM counted");
		return {
			heavy: await pick("n DESC"),
			median: await pick("n DESC", `n <= ${Number(med?.n ?? 1)}`),
			cold: await pick("n ASC"),
		};
	};
	try {
		const addresses = await spread(
			`SELECT value, count(*) AS n FROM (SELECT sender AS value FROM ${files("transfers")} UNION ALL SELECT recipient FROM ${files("transfers")}) WHERE value IS NOT NULL GROUP BY value`,
		);
		const txAccounts = await spread(
			`SELECT value, count(*) AS n FROM (SELECT from_address AS value FROM ${files("transactions")} UNION ALL SELECT to_address FROM ${files("transactions")}) WHERE value IS NOT NULL GROUP BY value`,
		);
		const factories = await spread(
			`SELECT caller AS value, count(*) AS n FROM ${files("contract_creations")} GROUP BY caller`,
		);
		const tokens = await spread(
			`SELECT contract AS value, count(*) AS n FROM ${files("transfers")} WHERE contract IS NOT NULL GROUP BY contract`,
		);
		const sample = async (column: string, dataset: "transactions" | "blocks") =>
			(await rows(`SELECT ${column} AS v FROM ${files(dataset)} USING SAMPLE reservoir(20 ROWS) REPEATABLE (42)`)).map(
				(r) => String(r.v),
			);
		const [head] = await rows(`SELECT max(number) AS n FROM ${files("blocks")}`);
		const missing = (tag: string) =>
			Array.from({ length: 20 }, (_, i) => `0x${i.toString(16).padStart(8, "0")}${tag.repeat(56 / tag.length)}`);
		return {
			chain,
			head: Number(head?.n),
			addresses,
			txAccounts,
			txHashes: await sample("transaction_hash", "transactions"),
			missingTxHashes: missing("f00d"),
			blockHashes: await sample("hash", "blocks"),
			missingBlockHashes: missing("beef"),
			factories: { heavy: factories.heavy, median: factories.median },
			tokens: { heavy: tokens.heavy, median: tokens.median },
		};
	} finally {
		conn.closeSync();
		instance.closeSync();
	}
}

export async function saveTargets(dataDir: string, t: SynthTargets): Promise<string> {
	const path = targetsPath(dataDir, t.chain);
	await writeFile(path, `${JSON.stringify(t, null, 1)}\n`);
	return path;
}
