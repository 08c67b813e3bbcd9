import { DuckDBInstance } from "@duckdb/node-api";
import { viewsSql } from "../../src/query/views.js";

/**
 * Keys sampled at random from the lake's own files (seeded, so runs compare), not from the
 * targets file: transaction and block hashes, and quiet wallets (at most QUIET transfers, which
 * is most of them), for the mixed load whose requests each ask a different key: so what carries
 * it is the cost of an answer, not a cache of answers, and no layout is tuned to a few keys.
 */
const SEED = 0.42;
const QUIET = 10;

export interface RandomKeys {
	txHashes: string[];
	blockHashes: string[];
	quietWallets: string[];
}

export async function sampleKeys(dataDir: string, chainId: string, perKind: number): Promise<RandomKeys> {
	const db = await DuckDBInstance.create(":memory:", { threads: "2" });
	const conn = await db.connect();
	try {
		await conn.run(viewsSql(dataDir, chainId));
		await conn.run(`SELECT setseed(${SEED})`);
		const column = async (sql: string) => (await conn.runAndReadAll(sql)).getRows().map((r) => String(r[0]));
		// Reservoir samples are repeatable with REPEATABLE(seed) at one thread count.
		const txHashes = await column(
			`SELECT transaction_hash FROM transactions USING SAMPLE reservoir(${perKind} ROWS) REPEATABLE (42)`,
		);
		const blockHashes = await column(`SELECT hash FROM blocks USING SAMPLE reservoir(${perKind} ROWS) REPEATABLE (42)`);
		const quietWallets = await column(
			`SELECT address FROM (SELECT recipient AS address FROM transfers WHERE recipient IS NOT NULL
			   UNION ALL SELECT sender FROM transfers WHERE sender IS NOT NULL)
			 GROUP BY address HAVING count(*) <= ${QUIET} ORDER BY hash(address) LIMIT ${perKind}`,
		);
		return { txHashes, blockHashes, quietWallets };
	} finally {
		conn.closeSync();
		db.closeSync();
	}
}

/** The random-key mix: each key's lookup, and each quiet wallet's transfers and transactions pages. */
export function randomKeyPaths(k: RandomKeys): string[] {
	const paths: string[] = [];
	for (let i = 0; i < Math.max(k.txHashes.length, k.blockHashes.length, k.quietWallets.length); i++) {
		const tx = k.txHashes[i];
		const block = k.blockHashes[i];
		const wallet = k.quietWallets[i];
		if (tx) paths.push(`/txs/${tx}`);
		if (block) paths.push(`/blocks/${block}`);
		if (wallet) {
			paths.push(`/address/${wallet}/transfers?asset_type=native,ft,nft&limit=100`);
			paths.push(`/address/${wallet}/txs?limit=100`);
		}
	}
	return paths;
}
