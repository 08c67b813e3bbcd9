/**
 * Every command in scripts/, as a real process: `--help` prints a usage naming every flag its
 * parser accepts and exits 0; an unknown flag exits 2 with one line and the usage, no stack. The
 * flags are read from the script's own parseArgs options (and the shared option sets it spreads
 * in), so a flag added without a word in the usage, or in README's Command-line reference, fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { SQL_FLAG_OPTIONS } from "../../src/api/sql-flags.js";
import { LAKE_FLAG_OPTIONS } from "../../src/store/delta/lake-flags.js";
import { type CliResult, REPO_ROOT, runScript } from "../helpers/cli.js";

/** Not covered: lock-platforms.ts, a maintainer's tool for package-lock.json. */
const SKIP = new Set(["lock-platforms.ts"]);
const SCRIPTS = readdirSync(join(REPO_ROOT, "scripts"))
	.filter((f) => f.endsWith(".ts") && !SKIP.has(f))
	.sort();
/** Where a script's options are declared, when not in the script (backfill's are shared with its tests). */
const OPTION_FILES: Record<string, string> = { "backfill.ts": "src/backfill/options.ts" };

/** The flags a script's parseArgs accepts, as typed: `--name`, or `-c` for a one-letter option. */
function acceptedFlags(script: string): string[] {
	const src = readFileSync(join(REPO_ROOT, OPTION_FILES[script] ?? `scripts/${script}`), "utf8");
	const names = [...src.matchAll(/^\s+"?([a-z][\w-]*)"?: \{\s*type: "(?:string|boolean)"/gm)].map(
		(m) => m[1] as string,
	);
	if (src.includes("...LAKE_FLAG_OPTIONS")) names.push(...Object.keys(LAKE_FLAG_OPTIONS));
	if (src.includes("...SQL_FLAG_OPTIONS")) names.push(...Object.keys(SQL_FLAG_OPTIONS));
	return names.map((n) => (n.length === 1 ? `-${n}` : `--${n}`));
}
/** `-c` also matches `--c`; `--data-dir` must not match inside `--data-dir-x`. */
const mentions = (text: string, flag: string) =>
	new RegExp(`(^|[^\\w-])-?${flag.replace(/[-]/g, "\\-")}(?![\\w-])`, "m").test(text);

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
/** The npm script that runs a file (`npm run <name>`). */
const npmName = (script: string) =>
	Object.entries(pkg.scripts).find(([, command]) => command.endsWith(`scripts/${script}`))?.[0];

/** How a user types it: `npm start` is npm's own, the others are `npm run <name>`. */
const typed = (name: string) => (name === "start" ? "npm start" : `npm run ${name}`);

/** README's "Command-line reference": from its heading to the next section of README. */
const README = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const refStart = README.indexOf("\n### Command-line reference");
const DOCS = README.slice(refStart, README.indexOf("\n### ", refStart + 1));
/** The part of README's reference about one command: its own section, or its rows of the benchmarks' table. */
function docSection(name: string): string {
	const heading = DOCS.indexOf(`\n#### \`${typed(name)}\``);
	if (heading >= 0) {
		const end = DOCS.indexOf("\n#### ", heading + 1);
		return DOCS.slice(heading, end === -1 ? undefined : end);
	}
	const row = DOCS.indexOf(`| \`${typed(name)}\` |`);
	if (row === -1) return "";
	const end = DOCS.indexOf("| `npm run ", row + 1);
	return DOCS.slice(row, end === -1 ? undefined : end);
}

/** Runs at most `n` at once: two cores are shared, and each start loads the script's imports. */
async function pool<T, R>(items: T[], n: number, run: (item: T) => Promise<R>): Promise<R[]> {
	const out: R[] = new Array(items.length);
	let next = 0;
	await Promise.all(
		Array.from({ length: n }, async () => {
			for (let i = next++; i < items.length; i = next++) out[i] = await run(items[i] as T);
		}),
	);
	return out;
}

/**
 * The unknown-flag run, for every command but the benchmarks other than `bench`: theirs all parse
 * with the same line (`parseArgs({ args: startCli(...), options })`), and each start costs a
 * second or two of a shared core.
 */
const BOGUS = SCRIPTS.filter((s) => !s.startsWith("bench-"));

const help = new Map<string, CliResult>();
const bogus = new Map<string, CliResult>();
beforeAll(async () => {
	const runs = [...SCRIPTS.map((s) => [s, "--help"]), ...BOGUS.map((s) => [s, "--no-such-flag"])];
	const results = await pool(runs, 6, ([s, flag]) => runScript(s as string, [flag as string]));
	runs.forEach(([s, flag], i) => {
		(flag === "--help" ? help : bogus).set(s as string, results[i] as CliResult);
	});
}, 120_000);

describe("every command's --help and bad flags", () => {
	it("covers the commands of package.json", () => {
		expect(SCRIPTS.length).toBeGreaterThan(15);
		for (const s of SCRIPTS) expect(npmName(s), s).toBeDefined();
	});

	it.each(SCRIPTS)("%s --help: exit 0, the usage with every flag", (script) => {
		const r = help.get(script) as CliResult;
		expect(r.code, r.stderr).toBe(0);
		expect(r.stderr).toBe("");
		expect(r.stdout).toMatch(new RegExp(`^usage: ${typed(npmName(script) as string)}\\b`));
		const flags = acceptedFlags(script);
		// The parser of a command with flags was found (a changed declaration style would hide them).
		if (script !== "data-readme.ts") expect(flags.length, script).toBeGreaterThan(0);
		for (const flag of [...flags, "--help", "--debug"])
			expect(mentions(r.stdout, flag), `${script} ${flag}`).toBe(true);
	});

	it.each(SCRIPTS)("%s: every flag is in README's Command-line reference", (script) => {
		const section = docSection(npmName(script) as string);
		expect(section, `README's Command-line reference has no section for ${typed(npmName(script) as string)}`).not.toBe(
			"",
		);
		for (const flag of acceptedFlags(script)) expect(mentions(section, flag), `${script} ${flag}`).toBe(true);
	});

	it.each(BOGUS)("%s --no-such-flag: exit 2, one line and the usage, no stack", (script) => {
		const r = bogus.get(script) as CliResult;
		expect(r.code, r.stderr).toBe(2);
		const [first, ...rest] = r.stderr.trimEnd().split("\n");
		expect(first).toBe("error: Unknown option '--no-such-flag'");
		expect(rest.join("\n")).toBe(`${(help.get(script) as CliResult).stdout.split("\n  --help")[0]?.trimEnd()}`);
		expect(r.stderr).not.toMatch(/^\s+at /m);
		expect(r.stdout).toBe("");
	});
});
