import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";

/**
 * Global setup: src/ and scripts/ turned into JavaScript once per run, file for file (esbuild's
 * transform, the one tsx applies to each file as it loads it; no bundling, so every module and
 * relative path keeps its place), for the test helpers to start scripts from
 * (test/helpers/cli.ts spawnScript). A script started under `--import tsx` spent about 1.3 s of
 * CPU on start-up here (`verify --help`), 0.4 s as JavaScript; the tests start many, on two cores.
 * `npm run ...` itself (tsx) stays covered: test/crash/stop-signals.test.ts and the examples
 * start the commands through npm, and the CLI tests of scripts whose work depends on their own
 * place in the repository run them under tsx (cli.ts TSX_ONLY).
 */
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function tsFiles(dir: string): string[] {
	return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
		.filter((e) => e.isFile() && e.name.endsWith(".ts"))
		.map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

export default function setup() {
	const out = mkdtempSync(join(tmpdir(), "chainlake-compiled-"));
	// Readable by every user: test/cli/failures.test.ts starts a script as another one.
	chmodSync(out, 0o755);
	buildSync({
		entryPoints: [...tsFiles("src"), ...tsFiles("scripts")].map((f) => join(ROOT, f)),
		outdir: out,
		outbase: ROOT,
		format: "esm",
		platform: "node",
		target: "node20",
		logLevel: "warning",
	});
	// What the code reads beside itself (the workload's Solidity sources), the packages it
	// imports, and "type": "module" for the .js files.
	cpSync(join(ROOT, "src/workload/contracts"), join(out, "src/workload/contracts"), { recursive: true });
	symlinkSync(join(ROOT, "node_modules"), join(out, "node_modules"));
	writeFileSync(join(out, "package.json"), JSON.stringify({ type: "module", private: true }));
	process.env.CHAINLAKE_TEST_COMPILED = out;
	return () => rmSync(out, { recursive: true, force: true });
}
