import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface CliResult {
	code: number | null;
	signal: NodeJS.Signals | null;
	stdout: string;
	stderr: string;
}

/** Starts a script of scripts/ the way `npm run` does (tsx), without npm's own start-up cost. */
export function spawnScript(script: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
	return spawn(process.execPath, ["--import", "tsx", `scripts/${script}`, ...args], {
		cwd: REPO_ROOT,
		env: { ...process.env, ...env, NO_COLOR: "1" },
		stdio: ["ignore", "pipe", "pipe"],
	});
}

export function runScript(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
	const child = spawnScript(script, args, env);
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
