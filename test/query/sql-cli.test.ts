import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dataReadme } from "../../src/store/data-readme.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { REPO_ROOT, runScript } from "../helpers/cli.js";

let anvil: AnvilInstance;
let dir: string;
let transferCount: number;
/** Every amount the workload moved, as decimal text. */
let amounts: string[];
beforeAll(async () => {
	anvil = await startAnvil({ chainId: 31337 });
	const work = await runWorkload({ rpcUrl: anvil.url });
	transferCount = work.expected.transfers.length;
	amounts = work.expected.transfers.flatMap((t) => (t.value == null ? [] : [String(t.value)]));
	dir = await mkdtemp(join(tmpdir(), "chainlake-sql-"));
	await backfillInto(dir, anvil.url, 31337);
});
afterAll(async () => {
	await anvil?.stop();
	await rm(dir, { recursive: true, force: true });
});

describe("npm run sql", () => {
	it("answers a query over the views and writes views.sql for other DuckDB clients", async () => {
		const r = await runScript("sql.ts", ["--data-dir", dir, "-c", "SELECT count(*)::INT AS n FROM transfers"]);
		expect(r.code, r.stderr).toBe(0);
		expect(r.stdout).toMatch(new RegExp(`\\b${transferCount}\\b`));
		const views = readFileSync(join(dir, "eip155-31337", "views.sql"), "utf8");
		expect(views).toContain("CREATE OR REPLACE VIEW transfers AS SELECT *, ");
		expect(views).toContain("CREATE OR REPLACE VIEW chunks AS");
	});

	it("gives each uint256 column its numeric forms: the largest amount by value_f64, not by text", async () => {
		const r = await runScript("sql.ts", [
			"--data-dir",
			dir,
			"-c",
			"SELECT arg_max(value, value_f64) AS by_number, max(value) AS by_text, typeof(any_value(value_d38)) AS d38 FROM transfers",
		]);
		expect(r.code, r.stderr).toBe(0);
		const values = amounts.map((v) => BigInt(v)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
		const largest = String(values.at(-1));
		const largestText = [...amounts].sort().at(-1) as string;
		expect(largestText).not.toBe(largest); // as text, a shorter amount sorts above the largest
		expect(r.stdout).toContain(`'${largest}'`);
		expect(r.stdout).toContain(`'${largestText}'`);
		expect(r.stdout).toContain("DECIMAL(38,0)");
	});

	it("says what to do when there is no data", async () => {
		const r = await runScript("sql.ts", ["--data-dir", join(dir, "nothing"), "-c", "SELECT 1"]);
		expect(r.code).toBe(2);
		expect(r.stderr).toContain("run a backfill first");
	});
});

describe("data/README.md", () => {
	it("is current with the schemas (regenerate with npm run data-readme)", () => {
		expect(readFileSync(join(REPO_ROOT, "data", "README.md"), "utf8")).toBe(dataReadme());
	});
});
