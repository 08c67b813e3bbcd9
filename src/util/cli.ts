/**
 * One error path for every command-line entry point (scripts/*.ts): `--help` prints the usage and
 * exits 0; a failure a user can meet (a bad flag, a taken port, a folder that cannot be written or
 * is a file, a node that does not answer or serves another chain) prints one or two lines naming
 * the cause and the fix and exits non-zero, with no stack; `--debug` (or CHAINLAKE_DEBUG=1) adds
 * the stack for the cases we did not foresee.
 */
import { diskFullError, isDiskFull } from "./disk-full.js";
import { ChainlakeError, UserInputError } from "./errors.js";

export interface CliSpec {
	/** The usage text printed by --help and after a bad flag. */
	usage: string;
	/** The folder the command writes, to name in a full-disk or permission message. */
	dataDir?: () => string | undefined;
}

/** Exit statuses: 2 for what the user typed, 1 for everything else. */
export const EXIT_USAGE = 2;
export const EXIT_FAILURE = 1;

const debugOn = (argv: readonly string[]) => argv.includes("--debug") || process.env.CHAINLAKE_DEBUG === "1";

/** The arguments a command parses: the process's, less `--debug` (the error path's own flag). */
export function cliArgs(argv: readonly string[] = process.argv.slice(2)): string[] {
	return argv.filter((a) => a !== "--debug");
}

/** True when the user asked for help (`--help` or `-h` anywhere before a `--`). */
export function wantsHelp(argv: readonly string[] = process.argv.slice(2)): boolean {
	const end = argv.indexOf("--");
	return (end === -1 ? argv : argv.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/**
 * Runs a command's `main`: --help first, then main, then the one error path for whatever it
 * throws (and for errors thrown later from timers or unawaited promises). main's number is the
 * exit status; a main that returns nothing leaves the process running (a server) until it exits.
 */
export function runCli(spec: CliSpec, main: (argv: string[]) => Promise<number | undefined>): void {
	const raw = process.argv.slice(2);
	if (wantsHelp(raw)) {
		process.stdout.write(`${spec.usage.trimEnd()}\n`);
		process.exit(0);
	}
	const fail = (err: unknown) => {
		void explainFailure(err, spec).then(({ lines, code }) => {
			process.stderr.write(`${lines.join("\n")}\n`);
			if (debugOn(raw) && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
			else if (code === EXIT_FAILURE && !(err instanceof ChainlakeError))
				process.stderr.write("(run again with --debug for the stack)\n");
			process.exit(code);
		});
	};
	process.on("uncaughtException", fail);
	process.on("unhandledRejection", fail);
	main(cliArgs(raw)).then((code) => {
		if (code !== undefined) process.exit(code);
	}, fail);
}

/** The sentence (one or two lines) and exit status for an error a command met. */
export async function explainFailure(err: unknown, spec: CliSpec): Promise<{ lines: string[]; code: number }> {
	const e = err as NodeJS.ErrnoException & { address?: string; port?: number; path?: string };
	const dataDir = spec.dataDir?.();
	if (err instanceof UserInputError) return { lines: [`error: ${err.message}`], code: EXIT_USAGE };
	// node:util parseArgs: an unknown flag, a missing value, a value that looks like a flag.
	if (typeof e?.code === "string" && e.code.startsWith("ERR_PARSE_ARGS")) {
		return { lines: [`error: ${e.message}`, spec.usage.trimEnd()], code: EXIT_USAGE };
	}
	if (isDiskFull(err)) {
		const full = await diskFullError(dataDir ?? ".", err);
		return { lines: [`error: ${full.message}`], code: EXIT_FAILURE };
	}
	if (err instanceof ChainlakeError) {
		if (err.code === "RPC_UNREACHABLE") {
			return {
				lines: [
					`error: ${err.message}`,
					"check that the node is running and that the URL (--rpc, --follow or CHAINLAKE_RPC_URL) is right",
				],
				code: EXIT_FAILURE,
			};
		}
		return { lines: [`error: ${err.message}`], code: EXIT_FAILURE };
	}
	switch (e?.code) {
		case "EADDRINUSE":
			return {
				lines: [
					`error: port ${e.port ?? ""} on ${e.address ?? "this host"} is taken by another process`,
					"stop that process, or pick another port with --port (or PORT=...)",
				],
				code: EXIT_FAILURE,
			};
		case "EADDRNOTAVAIL":
			return {
				lines: [`error: cannot listen on ${e.address}: no such address on this machine`, "use --host 127.0.0.1"],
				code: EXIT_FAILURE,
			};
		case "EACCES":
		case "EPERM":
		case "EROFS":
			return {
				lines: [
					`error: cannot write ${e.path ?? dataDir ?? "the data folder"}: permission denied`,
					"pick a folder you can write with --data-dir (or CHAINLAKE_DATA_DIR), or fix its permissions",
				],
				code: EXIT_FAILURE,
			};
		case "ENOTDIR":
		case "EEXIST":
			return {
				lines: [
					`error: ${e.path ?? dataDir ?? "the data folder"} is a file (or under one), not a folder`,
					"point --data-dir (or CHAINLAKE_DATA_DIR) at a folder, or move the file away",
				],
				code: EXIT_FAILURE,
			};
	}
	const message = err instanceof Error ? err.message : String(err);
	return { lines: [`error: ${message}`], code: EXIT_FAILURE };
}
