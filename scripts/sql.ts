/**
 * `npm run sql -- [--data-dir data] [--chain eip155-1] [-c "<query>"]`: a DuckDB session with one
 * view per dataset over all partitions. Also writes <data>/<chain>/views.sql, for the DuckDB CLI
 * (`duckdb -init data/eip155-1/views.sql`) or any other DuckDB client. Failures go through
 * src/util/cli.ts.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { DuckDBInstance } from "@duckdb/node-api";
import { viewsSql } from "../src/query/views.js";
import { chainsIn } from "../src/util/chain.js";
import { demoDir, readFolder, startCli, usageError } from "../src/util/cli.js";

const USAGE = `usage: npm run sql -- [--data-dir data] [--chain eip155-<n>] [-c "<query>"]
  --data-dir <dir>     the lake's folder (CHAINLAKE_DATA_DIR; default data, or the demo's
                       ${demoDir()} when data/ holds no chain)
  --chain <chain>      the chain to open (default: the only one there)
  -c <query>           run one statement and exit (default: an interactive session)`;

const argv = startCli({ usage: USAGE, dataDir: () => dataDir });
const { values } = parseArgs({
	args: argv,
	options: {
		// No default here: readFolder tells "not given" from "given" (the demo folder fallback).
		"data-dir": { type: "string" },
		chain: { type: "string" },
		c: { type: "string" },
	},
});
const dataDir = readFolder(values["data-dir"], (line) => process.stderr.write(`${line}\n`));
const chains = chainsIn(dataDir);
const chain = values.chain ?? (chains.length === 1 ? chains[0] : undefined);
if (!chain || !chains.includes(chain))
	usageError(
		chains.length === 0
			? `no chain data under ${dataDir}: run a backfill first (see README), or npm start for a demo chain`
			: values.chain
				? `no chain ${values.chain} under ${dataDir} (found: ${chains.join(", ")})`
				: `pick a chain with --chain (found: ${chains.join(", ")})`,
	);

const sql = viewsSql(dataDir, chain);
writeFileSync(join(dataDir, chain, "views.sql"), sql);
const db = await DuckDBInstance.create(":memory:");
const conn = await db.connect();
await conn.run(sql);

async function runQuery(query: string): Promise<void> {
	const reader = await conn.runAndReadAll(query);
	const rows = reader.getRowObjectsJson();
	if (rows.length === 0) {
		console.log("(no rows)");
		return;
	}
	console.table(rows);
}

if (values.c) {
	try {
		await runQuery(values.c);
	} catch (err) {
		// The statement's own error (DuckDB's message says what is wrong with it): no stack, no hint.
		process.stderr.write(`${(err as Error).message}\n`);
		process.exit(1);
	}
} else {
	console.log(`${sql}-- views ready for ${chain}; end statements with ';', quit with .exit or Ctrl-D`);
	const rl = createInterface({ input: process.stdin, output: process.stdout, prompt: "chainlake> " });
	let buffer = "";
	rl.prompt();
	for await (const line of rl) {
		if (line.trim() === ".exit") break;
		buffer += `${line}\n`;
		if (buffer.trim().endsWith(";")) {
			try {
				await runQuery(buffer);
			} catch (err) {
				console.error((err as Error).message);
			}
			buffer = "";
		}
		rl.prompt();
	}
	rl.close();
}
