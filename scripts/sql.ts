/**
 * `npm run sql -- [--data-dir data] [--chain eip155-1] [-c "<query>"]`: a DuckDB session with one
 * view per dataset over all partitions. Also writes <data>/<chain>/views.sql, for the DuckDB CLI
 * (`duckdb -init data/eip155-1/views.sql`) or any other DuckDB client.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { DuckDBInstance } from "@duckdb/node-api";
import { chainsIn, viewsSql } from "../src/query/views.js";

const { values } = parseArgs({
	options: {
		"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR ?? "data" },
		chain: { type: "string" },
		c: { type: "string" },
	},
});
const dataDir = values["data-dir"] as string;
const chains = chainsIn(dataDir);
const chain = values.chain ?? (chains.length === 1 ? chains[0] : undefined);
if (!chain || !chains.includes(chain)) {
	process.stderr.write(
		chains.length === 0
			? `no chain data under ${dataDir}: run a backfill first (see README)\n`
			: `pick a chain with --chain (found: ${chains.join(", ")})\n`,
	);
	process.exit(2);
}

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
