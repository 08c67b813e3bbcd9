import type { TokenReader } from "../../rpc/token-reads.js";
import { crashPoint } from "../../util/crash-point.js";
import { sqlString as quote } from "../../util/sql-string.js";
import { saveManifest } from "../delta/save-manifest.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { partitionPath, stagingDir } from "../format/layout.js";
import { listedFiles, metadataFiles, nextGeneration } from "../format/manifest.js";
import { type Manifest, METADATA_TABLES, type MetadataEntry } from "../format/records.js";
import { settledChunks } from "../indexes/runs.js";

/*
 * Token and collection metadata (name, symbol, decimals; each NFT's tokenURI or uri) and the
 * genesis allocations native balances start from, read from the node (rpc/token-reads.ts) and
 * cached in the lake as three small tables (`token_metadata/token_metadata_<from>_<to>_g<gen>.parquet`,
 * `token_uris/...`, `opening_balances/...`), one set per block range whose tokens and paying
 * accounts they cover, listed in the manifest's `metadata`. The background merges (merges.ts) add
 * a set as chunks settle, for the tokens, token ids and payers first seen in them, read as the
 * node answers when the step runs. Settled blocks are not reorged, so a set is never replaced.
 */

/** The most settled chunks one step covers, so one step's calls stay bounded. */
const CHUNKS_PER_STEP = 64;
/** Node calls in flight at once. */
const CALLS_AT_ONCE = 64;

/**
 * The block range the next step covers, or null when none is due: first block 0 alone as soon
 * as it is stored (the genesis allocations of the node's own accounts, so a dev chain's funded
 * accounts are right from the start; block 0 moves nothing), then settled chunks in order (from
 * the first block stored, in a lake that does not start at 0).
 */
function due(m: Manifest): { from: number; to: number; last_hash: string } | null {
	if (m.chunks.length === 0) return null;
	let covered = Math.max(-1, ...(m.metadata ?? []).map((e) => e.to));
	if (!m.metadata?.length) {
		const zero = m.chunks.find((c) => c.from === 0);
		if (zero) return { from: 0, to: 0, last_hash: zero.last_hash };
		covered = Math.min(...m.chunks.map((c) => c.from)) - 1;
	}
	const chunks = [];
	for (const c of settledChunks(m)) {
		if (c.to <= covered) continue;
		const prev = chunks.at(-1)?.to ?? covered;
		if (c.from > prev + 1) break;
		chunks.push(c);
		if (chunks.length >= CHUNKS_PER_STEP) break;
	}
	const last = chunks.at(-1);
	return last ? { from: covered + 1, to: last.to, last_hash: last.last_hash } : null;
}

export const metadataDue = (m: Manifest): boolean => due(m) !== null;

const list = (files: string[]) => `read_parquet([${files.map(quote).join(", ")}])`;

/** Runs `f` over `items`, CALLS_AT_ONCE at a time. */
async function inBatches<T, R>(items: T[], f: (t: T) => Promise<R>): Promise<R[]> {
	const out: R[] = [];
	for (let i = 0; i < items.length; i += CALLS_AT_ONCE)
		out.push(...(await Promise.all(items.slice(i, i + CALLS_AT_ONCE).map(f))));
	return out;
}

/**
 * Reads the metadata of the tokens and token ids first moved in the next settled range and lists
 * its files in one save. Returns [] (nothing unlisted), or null when no range is due.
 */
export async function metadataStep(
	writer: ParquetWriter,
	dataDir: string,
	m: Manifest,
	reader: TokenReader,
	readUris: boolean,
	exclusive: <T>(commit: () => Promise<T>) => Promise<T> = (commit) => commit(),
): Promise<string[] | null> {
	const range = due(m);
	if (!range) return null;
	const transfers = listedFiles(dataDir, m, "transfers", [range.from, range.to]);
	const known = metadataFiles(dataDir, m, "token_metadata");
	const knownUris = metadataFiles(dataDir, m, "token_uris");
	const knownOpenings = metadataFiles(dataDir, m, "opening_balances");
	const inRange = `block_number BETWEEN ${range.from} AND ${range.to}`;
	const tokens =
		transfers.length === 0
			? []
			: await writer.select(
					`SELECT contract AS address, min(token_standard) AS standard FROM ${list(transfers)}
					 WHERE ${inRange} AND contract IS NOT NULL AND token_standard IN ('erc20', 'erc721', 'erc1155')
					 ${known.length ? `AND contract NOT IN (SELECT address FROM ${list(known)})` : ""}
					 GROUP BY contract ORDER BY contract`,
				);
	const ids =
		transfers.length === 0 || !readUris
			? []
			: await writer.select(
					`SELECT DISTINCT contract, token_standard AS standard, token_id FROM (
						SELECT contract, token_standard, token_id FROM ${list(transfers)} WHERE ${inRange} AND token_standard IN ('erc721', 'erc1155') AND token_id IS NOT NULL
						UNION ALL SELECT contract, token_standard, unnest(batch_token_ids) FROM ${list(transfers)} WHERE ${inRange} AND batch_token_ids IS NOT NULL)
					 ${knownUris.length ? `WHERE (contract, token_id) NOT IN (SELECT (contract, token_id) FROM ${list(knownUris)})` : ""}
					 ORDER BY contract, token_id`,
				);
	// Genesis allocations of the accounts that pay: a payer's funds must come from somewhere.
	const payers =
		transfers.length === 0 || m.chunks.every((c) => c.from !== 0)
			? []
			: await writer.select(
					`SELECT DISTINCT address FROM (
						SELECT from_address AS address FROM ${list(listedFiles(dataDir, m, "transactions", [range.from, range.to]))} WHERE ${inRange}
						UNION ALL SELECT sender FROM ${list(transfers)} WHERE ${inRange} AND token_standard = 'native')
					 WHERE address IS NOT NULL
					 ${knownOpenings.length ? `AND address NOT IN (SELECT address FROM ${list(knownOpenings)})` : ""}
					 ORDER BY address`,
				);
	const tokenRows = await inBatches(tokens, async (t) => ({
		address: String(t.address),
		standard: String(t.standard),
		...(await reader.info(String(t.address), String(t.standard))),
	}));
	const uriRows = await inBatches(ids, async (t) => ({
		contract: String(t.contract),
		token_id: String(t.token_id),
		token_uri: await reader.uri(String(t.contract), String(t.standard), String(t.token_id)),
	}));
	// A dev node's funded accounts (eth_accounts; none on a public node), with block 0.
	if (range.from === 0) {
		const known = new Set(payers.map((p) => String(p.address)));
		for (const a of await reader.accounts()) if (!known.has(a)) payers.push({ address: a });
	}
	const openingRows = await inBatches(payers, async (p) => ({
		address: String(p.address),
		balance: (await reader.balance(String(p.address), 0))?.toString() ?? null,
		read_at: 0,
	}));
	const entry: MetadataEntry = {
		...range,
		gen: nextGeneration(m),
		tokens: tokenRows.length,
		uris: uriRows.length,
		openings: openingRows.length,
	};
	const staging = stagingDir(dataDir, m.chain);
	for (const [table, rows] of [
		["token_metadata", tokenRows],
		["token_uris", uriRows],
		["opening_balances", openingRows],
	] as const) {
		const def = METADATA_TABLES[table];
		await writer.writeRows(def.columns, def.order, rows, partitionPath(dataDir, m.chain, table, entry), staging);
	}
	crashPoint("metadata.written");
	return exclusive(async () => {
		// (Settled blocks are not reorged, and only this step covers a range: nothing to recheck.)
		m.metadata = [...(m.metadata ?? []), entry];
		await saveManifest(dataDir, m);
		crashPoint("metadata.committed");
		return [];
	});
}
