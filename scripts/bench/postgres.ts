import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import pg from "pg";
import type { DatasetName } from "../../src/extract/rows.js";
import { listedFiles, readManifestSafe } from "../../src/store/format/manifest.js";
import { SCHEMAS } from "../../src/store/format/schema.js";

/**
 * PostgreSQL as a user would otherwise run it for this data: Debian's package, a fresh cluster
 * on loopback, the same rows loaded from our Parquet files, and the B-tree indexes an explorer
 * keeps for these endpoints. Durability is switched off for the load and the run (fsync,
 * full_page_writes, synchronous_commit), as our own Parquet writes do not fsync either.
 */
export const PG_TABLES: readonly DatasetName[] = ["blocks", "transactions", "logs", "transfers", "contract_creations"];

const INDEXES: Record<string, string[]> = {
	blocks: ["PRIMARY KEY (number)", "hash"],
	transactions: ["PRIMARY KEY (id)", "transaction_hash", "from_address, id", "to_address, id"],
	// A transaction's logs, as /txs/{hash} answers them. Only that index: the event routes are not
	// compared, and what an explorer keeps for them (by contract, by topic) would only make it bigger.
	logs: ["transaction_hash"],
	transfers: ["PRIMARY KEY (id)", "sender, id", "recipient, id", "contract, id"],
	contract_creations: ["PRIMARY KEY (id)", "caller, id"],
};

export interface PgServer {
	client: pg.Client;
	/** Loads `tables` (default PG_TABLES) of a chain from its Parquet files, with their indexes. */
	load(
		dataDir: string,
		chain: string,
		tables?: readonly DatasetName[],
	): Promise<{ seconds: number; bytes: number; perTable: Record<string, number> }>;
	stop(): void;
}

function pgBin(): string {
	const find = () => {
		if (!existsSync("/usr/lib/postgresql")) return null;
		const versions = readdirSync("/usr/lib/postgresql").sort().reverse();
		const v = versions.find((x) => existsSync(`/usr/lib/postgresql/${x}/bin/pg_ctl`));
		return v ? `/usr/lib/postgresql/${v}/bin` : null;
	};
	let bin = find();
	if (!bin && process.getuid?.() === 0) {
		process.stderr.write("installing Debian's postgresql package (apt-get)\n");
		execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
		execFileSync("apt-get", ["install", "-y", "-qq", "postgresql"], {
			stdio: "inherit",
			env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
		});
		bin = find();
	}
	if (!bin)
		throw new Error("PostgreSQL is not installed: run `sudo apt-get install -y postgresql`, or pass --no-postgres");
	return bin;
}

export async function startPostgres(port: number): Promise<PgServer> {
	const bin = pgBin();
	const dir = mkdtempSync(join(tmpdir(), "chainlake-pg-"));
	chmodSync(dir, 0o777);
	const pgdata = join(dir, "data");
	// The server refuses to run as root; Debian's package creates the postgres user.
	const asPg = (cmd: string, args: string[]) => {
		const r =
			process.getuid?.() === 0
				? spawnSync("runuser", ["-u", "postgres", "--", cmd, ...args], { encoding: "utf8" })
				: spawnSync(cmd, args, { encoding: "utf8" });
		if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
	};
	asPg(`${bin}/initdb`, ["-D", pgdata, "-A", "trust", "-U", "bench", "--no-sync"]);
	const settings = [
		"listen_addresses=127.0.0.1",
		`port=${port}`,
		`unix_socket_directories=${dir}`,
		"shared_buffers=2GB",
		"work_mem=64MB",
		"maintenance_work_mem=2GB",
		// A bulk load with no replica: WAL kept small (it took up to 16 GB of disk beside the
		// tables during the load), index builds and COPYs logged minimally. Queries are the same.
		"wal_level=minimal",
		"max_wal_senders=0",
		"max_wal_size=1GB",
		"fsync=off",
		"full_page_writes=off",
		"synchronous_commit=off",
		"max_parallel_maintenance_workers=2",
	];
	asPg(`${bin}/pg_ctl`, [
		"-D",
		pgdata,
		"-w",
		"-l",
		join(dir, "log"),
		"-o",
		settings.map((s) => `-c ${s}`).join(" "),
		"start",
	]);
	const client = new pg.Client({ host: "127.0.0.1", port, user: "bench", database: "postgres" });
	await client.connect();
	return {
		client,
		async load(dataDir, chain, tables = PG_TABLES) {
			const started = performance.now();
			const m = readManifestSafe(dataDir, chain);
			const duck = await DuckDBInstance.create(":memory:");
			const conn = await duck.connect();
			const csvDir = join(dir, "csv");
			execFileSync("mkdir", ["-p", csvDir]);
			chmodSync(csvDir, 0o777);
			const perTable: Record<string, number> = {};
			try {
				for (const table of tables) {
					const schema = SCHEMAS[table] as Record<string, readonly [string, string]>;
					const columns = Object.entries(schema);
					await client.query(`CREATE TABLE ${table} (${columns.map(([c, [t]]) => `"${c}" ${pgType(t)}`).join(", ")})`);
					const csv = join(csvDir, `${table}.csv`);
					// Lists and structs are written as Postgres array / JSON literals.
					const select = columns.map(([c, [t]]) =>
						t.endsWith("[]") && !t.startsWith("STRUCT")
							? `CASE WHEN "${c}" IS NULL THEN NULL ELSE '{' || array_to_string("${c}", ',') || '}' END AS "${c}"`
							: t.startsWith("STRUCT")
								? `to_json("${c}")::VARCHAR AS "${c}"`
								: `"${c}"`,
					);
					// One file's rows at a time: the CSV beside the growing table stays one file's size
					// (a whole table's CSV was gigabytes more on a disk PostgreSQL already fills).
					for (const file of listedFiles(dataDir, m, table)) {
						await conn.run(
							`COPY (SELECT ${select.join(", ")} FROM read_parquet('${file}')) TO '${csv}' (FORMAT csv, HEADER)`,
						);
						chmodSync(csv, 0o644);
						await client.query(`COPY ${table} FROM '${csv}' (FORMAT csv, HEADER)`);
						rmSync(csv);
					}
					for (const index of INDEXES[table] ?? []) {
						await client.query(
							index.startsWith("PRIMARY") ? `ALTER TABLE ${table} ADD ${index}` : `CREATE INDEX ON ${table} (${index})`,
						);
					}
					await client.query(`VACUUM ANALYZE ${table}`);
					const size = await client.query(`SELECT pg_total_relation_size('${table}')::BIGINT AS b`);
					perTable[table] = Number(size.rows[0].b);
				}
				// Its writes on disk before anything is timed: a checkpoint, then the kernel's own
				// write-back (after the load, gigabytes of dirty pages were still being written while
				// the next figures were taken, and the service's files fell out of the page cache).
				await client.query("CHECKPOINT");
				execFileSync("sync");
			} finally {
				conn.closeSync();
				duck.closeSync();
			}
			const bytes = Object.values(perTable).reduce((a, b) => a + b, 0);
			return { seconds: (performance.now() - started) / 1000, bytes, perTable };
		},
		stop() {
			void client.end();
			try {
				asPg(`${bin}/pg_ctl`, ["-D", pgdata, "-m", "fast", "stop"]);
			} finally {
				rmSync(dir, { recursive: true, force: true });
			}
		},
	};
}

/** Postgres type for a DuckDB column type of our schema (uint256 strings stay text, as in our files). */
function pgType(duck: string): string {
	if (duck.startsWith("STRUCT")) return "jsonb";
	if (duck === "VARCHAR[]") return "text[]";
	if (duck === "INTEGER[]") return "integer[]";
	if (duck === "VARCHAR") return "text";
	// (Postgres has no 1-byte integer.)
	if (duck === "TINYINT") return "smallint";
	if (duck === "INTEGER") return "integer";
	if (duck === "BIGINT") return "bigint";
	const decimal = /^DECIMAL\((\d+),(\d+)\)$/.exec(duck);
	if (decimal) return `numeric(${decimal[1]},${decimal[2]})`;
	throw new Error(`no Postgres type for ${duck}`);
}
