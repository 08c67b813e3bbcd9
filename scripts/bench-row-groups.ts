/**
 * `npm run bench:row-groups -- --data-dir data/synth-M`: what a lookup costs by the row groups of
 * the file it reads, on a lake's own newest files (issue 26; BENCHMARKS.md has the figures):
 *  1. by-address: files of 32 row groups cut from the newest by-address transfers (the whole-row
 *     `transfers_by_address`, or the records' fields as columns) around quiet wallets, in groups of 16,384, 4,096 and 2,048 rows (DuckDB's COPY): a wallet's 15 columns;
 *  2. lookup records: 65,536 of the newest `transaction_records`, in DuckDB's groups of 2,048 and
 *     in 2,048, 512, 256 and 128 by the small-groups writer (src/store/files/small-groups.ts);
 *  3. by-address rows as records: the same 32 groups of 4,096 rows around each quiet wallet as
 *     in 1, rewritten with the transfer pre-encoded in one JSON-array column beside the key
 *     (`address, id, block_number, record`), and with the columns a wallet page filters on kept
 *     beside it (asset type, standard, contract, sender, recipient), in groups of 4,096 and 2,048
 *     (DuckDB) and 2,048 and 1,024 (small-groups writer, every column text): what a wallet's page
 *     would cost per file read with records instead of 15 columns, and the bytes.
 * Each: p50 of a prepared lookup over sampled keys (metadata cache on, one thread), and the bytes.
 * Figures are printed, never asserted. Scratch files go to a temporary folder, removed at the end.
 */
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { writeSmallGroups } from "../src/store/files/small-groups.js";
import { ADDRESS_LAYOUTS, recordRelationSql } from "../src/store/format/address-records.js";
import type { IndexName } from "../src/store/format/indexes.js";
import { listedFiles, loadManifest } from "../src/store/format/manifest.js";
import { indexFiles } from "../src/store/indexes/listing.js";
import { parseChainId } from "../src/util/chain.js";
import { flagUsage, startCli } from "../src/util/cli.js";
import { sqlString as quote } from "../src/util/sql-string.js";

const options = {
	"data-dir": { type: "string", default: "data/synth-M" },
	chain: { type: "string", default: "eip155-1" },
	keys: { type: "string", default: "40" },
} as const;
const { values } = parseArgs({
	args: startCli({ usage: flagUsage("npm run bench:row-groups -- --data-dir <lake> [flags]", options) }),
	options,
});
const chain = parseChainId(values.chain);
const dataDir = values["data-dir"];
const keys = Number(values.keys);
const TRANSFER_COLUMNS =
	"id, transaction_hash, block_hash, block_number, block_timestamp, origin, contract, sender, recipient, value, token_id, batch_values, batch_token_ids, asset_type, token_standard";

const manifest = await loadManifest(dataDir, chain.id, chain.number);
const newestOf = (index: IndexName) => indexFiles(dataDir, manifest, index).at(-1)?.path;
const newest = (index: IndexName) => {
	const f = newestOf(index);
	if (!f) throw new Error(`${dataDir} has no ${index} files: write a chain first (npm run synth)`);
	return f;
};
/**
 * The newest by-address transfers as whole rows: the whole-row index of a lake written before
 * by-address records, else the records' fields as columns (the API's 15 columns, where the
 * whole-row index also had the dataset's other four; a wallet record's block hash and timestamp
 * joined from the blocks files).
 */
function byAddressRows(): { path: string; rows: string } {
	const whole = newestOf("transfers_by_address");
	if (whole) return { path: whole, rows: `read_parquet(${quote(whole)})` };
	const older = newestOf("transfer_records_by_address");
	if (older)
		return {
			path: older,
			rows: `(SELECT address, ${TRANSFER_COLUMNS} FROM ${recordRelationSql(ADDRESS_LAYOUTS.transfer_records_by_address, `read_parquet(${quote(older)})`)})`,
		};
	const path = newest("wallet_transfers");
	const blocks = listedFiles(dataDir, manifest, "blocks").map(quote).join(", ");
	const r = recordRelationSql(ADDRESS_LAYOUTS.wallet_transfers, `read_parquet(${quote(path)})`);
	return {
		path,
		rows: `(SELECT address, ${TRANSFER_COLUMNS} FROM ${r} JOIN (SELECT number AS block_number, hash AS block_hash, timestamp AS block_timestamp FROM read_parquet([${blocks}])) USING (block_number))`,
	};
}
const scratch = await mkdtemp(join(tmpdir(), "chainlake-row-groups-"));
const db = await DuckDBInstance.create(":memory:", { threads: "1" });
const conn = await db.connect();
await conn.run("SET GLOBAL parquet_metadata_cache = true");

/** p50 (ms) of `sql` prepared once, bound to each key in turn (after a warm-up). */
async function p50(c: DuckDBConnection, sql: string, sample: string[]): Promise<number> {
	const st = await c.prepare(sql);
	for (const k of sample.slice(0, 3)) {
		st.bind({ k });
		await st.runAndReadAll();
	}
	const times: number[] = [];
	for (const k of sample) {
		st.bind({ k });
		const t = performance.now();
		await st.runAndReadAll();
		times.push(performance.now() - t);
	}
	return times.sort((a, b) => a - b)[times.length >> 1] as number;
}
const mb = async (path: string) => ((await stat(path)).size / 2 ** 20).toFixed(1);

/**
 * Sections 1 and 3: for each wallet, `write` puts `windowRows` rows of table `t` around it (the
 * FROM, WHERE and ORDER BY it is given) in file `out`; then the p50 over wallets of a lookup
 * reading `read` by address, and the bytes a row over every file, printed after `name`.
 */
async function byAddressLookups(
	wallets: { address: string; at: bigint }[],
	name: string,
	windowRows: number,
	read: string,
	write: (rows: string, out: string) => Promise<unknown>,
): Promise<void> {
	const times: number[] = [];
	let bytes = 0;
	let rows = 0;
	for (const [i, w] of wallets.entries()) {
		const out = join(scratch, `${name.replace(/\W+/g, "-")}-${i}.parquet`);
		const from = Math.max(1, Number(w.at) - windowRows / 2);
		await write(`FROM t WHERE rn >= ${from} AND rn < ${from + windowRows} ORDER BY rn`, out);
		times.push(
			await p50(conn, `SELECT ${read} FROM read_parquet(${quote(out)}) WHERE address = $k`, Array(12).fill(w.address)),
		);
		bytes += (await stat(out)).size;
		rows += Number((await conn.runAndReadAll(`SELECT count(*) FROM read_parquet(${quote(out)})`)).getRows()[0]?.[0]);
	}
	times.sort((a, b) => a - b);
	console.log(
		`  ${name}: p50 ${(times[times.length >> 1] as number).toFixed(2)} ms a lookup, ${(bytes / rows).toFixed(1)} bytes a row`,
	);
}
/** A DuckDB COPY of `select`'s rows in groups of `size`. */
const copy = (select: string, size: number) => (rows: string, out: string) =>
	conn.run(`COPY (${select} ${rows}) TO ${quote(out)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${size})`);

try {
	// 1. By-address: 32 groups of each size around each sampled quiet wallet.
	const { path: byAddress, rows: byAddressSource } = byAddressRows();
	await conn.run(`CREATE TABLE t AS SELECT *, row_number() OVER () AS rn FROM ${byAddressSource}`);
	const wallets = (
		await conn.runAndReadAll(
			`SELECT address, min(rn) AS at FROM t GROUP BY address HAVING count(*) BETWEEN 2 AND 6 ORDER BY hash(address) LIMIT ${Math.min(keys, 8)}`,
		)
	).getRowObjectsJS() as { address: string; at: bigint }[];
	console.log(`by-address: ${byAddress}, ${wallets.length} quiet wallets`);
	// 32 groups of each size around each wallet (section 3 rewrites the 4,096 ones).
	for (const size of [16_384, 4_096, 2_048])
		await byAddressLookups(
			wallets,
			`groups of ${size}`,
			32 * size,
			TRANSFER_COLUMNS,
			copy("SELECT * EXCLUDE rn", size),
		);

	// 2. Lookup records: 65,536 of them, DuckDB's groups against the small-groups writer's.
	const records = newest("transaction_records");
	await conn.run(`CREATE TABLE r AS SELECT * FROM read_parquet(${quote(records)}) ORDER BY hash LIMIT 65536`);
	const hashes = (await conn.runAndReadAll(`SELECT hash FROM r USING SAMPLE ${keys} ROWS (reservoir, 7)`))
		.getRows()
		.map((row) => String(row[0]));
	console.log(`records: ${records}, 65,536 rows, ${hashes.length} sampled hashes`);
	const duck = join(scratch, "records-duckdb.parquet");
	await conn.run(
		`COPY (SELECT * FROM r ORDER BY hash) TO ${quote(duck)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048)`,
	);
	const lookup = (f: string) => `SELECT record FROM read_parquet(${quote(f)}) WHERE hash = $k`;
	console.log(
		`  DuckDB, groups of 2048: p50 ${(await p50(conn, lookup(duck), hashes)).toFixed(2)} ms, ${await mb(duck)} MiB`,
	);
	for (const size of [2048, 512, 256, 128]) {
		const out = join(scratch, `records-${size}.parquet`);
		await writeSmallGroups(conn, "SELECT * FROM r ORDER BY hash", out, size);
		console.log(
			`  small-groups writer, groups of ${size}: p50 ${(await p50(conn, lookup(out), hashes)).toFixed(2)} ms, ${await mb(out)} MiB`,
		);
	}

	// 3. The by-address windows of section 1 (32 groups of 4,096 rows) as records.
	const rest = TRANSFER_COLUMNS.split(", ").filter((c) => !["id", "block_number"].includes(c));
	const json = (cols: string[]) => `to_json([${cols.map((c) => `${c}::VARCHAR`).join(", ")}])::VARCHAR`;
	const FILTERS = ["asset_type", "token_standard", "contract", "sender", "recipient"];
	const layouts: { name: string; select: string; read: string; size: number; small: boolean }[] = [];
	for (const size of [4_096, 2_048])
		layouts.push(
			{
				name: `record only, DuckDB, groups of ${size}`,
				select: `SELECT address, id, block_number, ${json(rest)} AS record`,
				read: "id, block_number, record",
				size,
				small: false,
			},
			{
				name: `record + filter columns, DuckDB, groups of ${size}`,
				select: `SELECT address, id, block_number, ${FILTERS.join(", ")}, ${json(rest.filter((c) => !FILTERS.includes(c)))} AS record`,
				read: `id, block_number, ${FILTERS.join(", ")}, record`,
				size,
				small: false,
			},
		);
	for (const size of [2_048, 1_024])
		layouts.push({
			name: `record only, small-groups writer, groups of ${size}`,
			select: `SELECT address, id, block_number::VARCHAR AS block_number, ${json(rest)} AS record`,
			read: "id, block_number, record",
			size,
			small: true,
		});
	console.log("by-address as records (the same 32 x 4,096 rows around each wallet as in 1):");
	for (const layout of [
		{
			name: "15 columns, DuckDB, groups of 4,096 (as in 1)",
			select: "SELECT * EXCLUDE rn",
			read: TRANSFER_COLUMNS,
			size: 4_096,
			small: false,
		},
		...layouts,
	]) {
		const write = layout.small
			? (rows: string, out: string) => writeSmallGroups(conn, `${layout.select} ${rows}`, out, layout.size)
			: copy(layout.select, layout.size);
		// The same rows as section 1's groups of 4,096, whatever the layout's own groups.
		await byAddressLookups(wallets, layout.name, 32 * 4_096, layout.read, write);
	}
} finally {
	conn.closeSync();
	db.closeSync();
	await rm(scratch, { recursive: true, force: true });
}
