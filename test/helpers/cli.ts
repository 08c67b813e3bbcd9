import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** tsx's loader by its path, for a child started outside the repository (`--import tsx` resolves from the cwd). */
const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

export interface SpawnOptions {
	/** The child's working folder (default the repository's root), for what it resolves relative paths against. */
	cwd?: string;
	/** Run the child as this user and group: as root, the only way to meet a folder one may not write. */
	uid?: number;
	gid?: number;
}

export interface CliResult {
	code: number | null;
	signal: NodeJS.Signals | null;
	stdout: string;
	stderr: string;
}

/**
 * Scripts always run from their TypeScript source: those that find other files by their own
 * place in the repository (cluster.ts starts the API scripts by path under tsx, data-readme.ts
 * writes data/README.md beside them), and start.ts, whose lock names it to another run by its
 * file (`scripts/start.ts`: "npm start", test/follow/first-hour.test.ts). Paths outside scripts/
 * (`../examples/...`) are not in the copy either.
 */
const TSX_ONLY = new Set(["cluster.ts", "data-readme.ts", "lock-platforms.ts", "start.ts"]);

/**
 * Starts a script of scripts/ the way `npm run` does, without npm's own start-up cost: from the
 * run's JavaScript copy of the code (test/setup/compiled-scripts.ts: the same esbuild transform
 * tsx makes, done once, a third of tsx's start-up CPU), or under tsx when there is none (a test
 * file run outside Vitest's global set-up) or the script is in TSX_ONLY.
 */
export function spawnScript(
	script: string,
	args: string[],
	env: NodeJS.ProcessEnv = {},
	opts: SpawnOptions = {},
): ChildProcess {
	const compiled = process.env.CHAINLAKE_TEST_COMPILED;
	const entry =
		compiled && !TSX_ONLY.has(script) && !script.includes("/")
			? [join(compiled, "scripts", script.replace(/\.ts$/, ".js"))]
			: opts.cwd
				? ["--import", TSX, join(REPO_ROOT, "scripts", script)]
				: ["--import", "tsx", `scripts/${script}`];
	return spawn(process.execPath, [...entry, ...args], {
		cwd: opts.cwd ?? REPO_ROOT,
		env: { ...process.env, ...env, NO_COLOR: "1" },
		stdio: ["ignore", "pipe", "pipe"],
		uid: opts.uid,
		gid: opts.gid,
	});
}

export function runScript(
	script: string,
	args: string[],
	env: NodeJS.ProcessEnv = {},
	opts: SpawnOptions = {},
): Promise<CliResult> {
	const child = spawnScript(script, args, env, opts);
	let stdout = "";
	let stderr = "";
	child.stdout?.on("data", (c) => {
		stdout += c;
	});
	child.stderr?.on("data", (c) => {
		stderr += c;
	});
	return new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
}
