/**
 * `npm run bench:lookup-floor -- --data-dir data/synth-M`: the floor of a lookup by hash in DuckDB
 * over a lake's lookup records (`block_records`, `transaction_records`), and what a table of
 * DuckDB's own format would take instead (issue 26; BENCHMARKS.md "seventeenth figures"). For
 * hashes sampled from the listed files, each read from the file that holds it, alternating:
 *  1. `parquet`: as the store reads it: a prepared statement, the file list and the hash bound;
 *  2. `parquet, no parameters`: the file and the hash written in the statement's text, prepared
 *     once and run again: DuckDB binds and plans a `read_parquet` statement again at every run
 *     (its bind data says it cannot be cached), so this is the planning a prepared lookup cannot
 *     shed;
 *  3. `duckdb table`: the same hashes and records copied into a DuckDB database file with an index
 *     on the hash (ART), attached read-only, a prepared statement with the hash bound: a plan
 *     DuckDB keeps between runs. Not how the lake stores anything: measured to say what leaving
 *     Parquet for the lookups would buy, and at what bytes;
 *  4. `SELECT $k`: a bound statement reading no file, the statement's own floor.
 * p50 of each (one DuckDB instance, two threads, the metadata cache on, as the service), and the
 * bytes of each form. The database file goes to a temporary folder, removed at the end. Figures
 * are printed, never asserted.
 */
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type DuckDBConnection, DuckDBInstance, type DuckDBPreparedStatement, listValue } from "@duckdb/node-api";
import { resultRows } from "../src/query/store/result-rows.js";
import { partPaths } from "../src/store/format/key-parts.js";
import { loadManifest } from "../src/store/format/manifest.js";
import { indexFiles } from "../src/store/indexes/listing.js";
import { parseChainId } from "../src/util/chain.js";
import { flagUsage, startCli } from "../src/util/cli.js";
import { sqlString as quote } from "../src/util/sql-string.js";
import { summarise } from "./bench/measure.js";

const options = {
	"data-dir": { type: "string", default: "data/synth-M" },
	chain: { type: "string", default: "eip155-1" },
	keys: { type: "string", default: "300" },
	rounds: { type: "string", default: "5" },
} as const;
const { values } = parseArgs({
	args: startCli({ usage: flagUsage("npm run bench:lookup-floor -- --data-dir <lake> [flags]", options) }),
	options,
});
const chain = parseChainId(values.chain);
const dataDir = values["data-dir"];
const keys = Number(values.keys);
const rounds = Number(values.rounds);
const manifest = await loadManifest(dataDir, chain.id, chain.number);

const scratch = await mkdtemp(join(tmpdir(), "chainlake-lookup-floor-"));
const db = await DuckDBInstance.create(":memory:", { threads: "2" });
const conn = await db.connect();
await conn.run("SET GLOBAL parquet_metadata_cache = true");
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** One form of the lookup: its statement for a key in a file, run and read. */
type Form = (file: string, key: string) => Promise<unknown[]>;

async function bound(c: DuckDBConnection, sql: string, params: (file: string, key: string) => Record<string, unknown>) {
	const st = await c.prepare(sql);
	return async (file: string, key: string) => {
		st.clearBindings();
		st.bind(params(file, key) as Parameters<typeof st.bind>[0]);
		return resultRows(await st.run());
	};
}

async function measure(index: "block_records" | "transaction_records"): Promise<void> {
	// Every part of every run and chunk file the index has, as the store lists them.
	const files = indexFiles(dataDir, manifest, index).flatMap((f) => partPaths(f.path, f.parts));
	if (files.length === 0) {
		console.log(`${index}: none listed in ${dataDir} (npm run reindex writes them)`);
		return;
	}
	const list = `[${files.map(quote).join(", ")}]`;
	const sample = (
		await conn.runAndReadAll(
			`SELECT hash, filename FROM read_parquet(${list}, filename = true) USING SAMPLE reservoir(${keys} ROWS) REPEATABLE (42)`,
		)
	)
		.getRows()
		.map((r) => [String(r[1]), String(r[0])] as const);
	const database = join(scratch, `${index}.duckdb`);
	const writing = await DuckDBInstance.create(database);
	const writer = await writing.connect();
	const copyStarted = performance.now();
	await writer.run(`CREATE TABLE records AS SELECT hash, record FROM read_parquet(${list})`);
	await writer.run("CREATE UNIQUE INDEX records_by_hash ON records (hash)");
	await writer.run("CHECKPOINT");
	writer.closeSync();
	writing.closeSync();
	const copyMs = performance.now() - copyStarted;
	await conn.run(`ATTACH ${quote(database)} AS ${index} (READ_ONLY)`);

	// Statements written with the key in their text, prepared once each (section 2).
	const constant = new Map<string, DuckDBPreparedStatement>();
	for (const [file, key] of sample)
		constant.set(key, await conn.prepare(`SELECT record FROM read_parquet(${quote(file)}) WHERE hash = ${quote(key)}`));
	const forms: Record<string, Form> = {
		parquet: await bound(conn, "SELECT record FROM read_parquet($files) WHERE hash = $k", (file, k) => ({
			files: listValue([file]),
			k,
		})),
		"parquet, no parameters": async (_f, key) => resultRows(await (constant.get(key) as DuckDBPreparedStatement).run()),
		"duckdb table": await bound(conn, `SELECT record FROM ${index}.records WHERE hash = $k`, (_f, k) => ({ k })),
		"SELECT $k": await bound(conn, "SELECT $k AS record", (_f, k) => ({ k })),
	};
	const times: Record<string, number[]> = Object.fromEntries(Object.keys(forms).map((name) => [name, []]));
	for (let round = 0; round <= rounds; round++)
		for (const [file, key] of sample)
			for (const [name, form] of Object.entries(forms)) {
				const t = performance.now();
				const rows = await form(file, key);
				// Round 0 warms each form up (footers, the database's pages).
				if (round > 0) times[name]?.push(performance.now() - t);
				if (rows.length !== 1) throw new Error(`${index} ${name}: ${rows.length} rows for ${key}`);
			}
	let parquetBytes = 0;
	for (const f of files) parquetBytes += (await stat(f)).size;
	console.log(
		`\n${index}: ${sample.length} hashes, ${rounds} rounds (p50 ms); Parquet ${mib(parquetBytes)} MiB in ${files.length} files, the DuckDB table with its index ${mib((await stat(database)).size)} MiB (copied in ${(copyMs / 1000).toFixed(1)} s)`,
	);
	for (const [name, ms] of Object.entries(times)) console.log(`  ${name.padEnd(24)} ${summarise(ms).p50.toFixed(3)}`);
	await conn.run(`DETACH ${index}`);
}

try {
	await measure("block_records");
	await measure("transaction_records");
} finally {
	conn.closeSync();
	db.closeSync();
	await rm(scratch, { recursive: true, force: true });
}
