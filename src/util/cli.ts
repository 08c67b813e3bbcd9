/**
 * One error path for every command-line entry point (scripts/*.ts): `--help` (or `-h`) prints the
 * usage and exits 0; a failure a user can meet (a bad flag, a taken port, a folder that cannot be
 * written or is a file, a node that does not answer or serves another chain, a held write lock)
 * prints one or two lines naming the cause and the fix and exits non-zero, with no stack;
 * `--debug` (or CHAINLAKE_DEBUG=1) adds the stack for the cases we did not foresee.
 *
 * Two ways in, the same path:
 *  - `const argv = startCli(spec)` at the top of a script written as top-level code: it answers
 *    --help, then routes whatever the rest of the module throws (top-level await included), and
 *    whatever is thrown later from timers or unawaited promises, through `explainFailure`;
 *  - `runCli(spec, main)` for a script with a `main(argv)` whose number is the exit status.
 * In both, flags are parsed from `argv` (the arguments less --debug): node:util's parseArgs
 * errors (an unknown flag, a missing value) print with the usage and exit 2, as do
 * `usageError(...)` and anything thrown inside `userInput(...)`.
 */
import { mkdirSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { chainsIn } from "./chain.js";
import { diskFullError, isDiskFull } from "./disk-full.js";
import { ChainlakeError, UserInputError } from "./errors.js";

export interface CliSpec {
	/** The usage text printed by --help and after a bad flag: every flag, its default and env twin. */
	usage: string;
	/** The folder the command writes, to name in a full-disk or permission message. */
	dataDir?: () => string | undefined;
	/** How the port is chosen, for a taken-port message; default "--port (or PORT)". */
	portFlag?: string;
	/** How the folder is chosen, for a folder message; default "--data-dir (or CHAINLAKE_DATA_DIR)". */
	dataDirFlag?: string;
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

/** Stops the command on something the user typed: `error: <message>`, exit 2. */
export function usageError(message: string): never {
	throw new UserInputError("INVALID_ARGS", message);
}

/**
 * Runs a check of the user's input (a flag's value, a key list) whose failures are plain Errors
 * naming the flag: any error it throws becomes a UserInputError (one line, exit 2).
 */
export function userInput<T>(check: () => T): T {
	try {
		return check();
	} catch (err) {
		// A file system's error (a folder that is a file, a permission) is not the user's typing:
		// it keeps its own sentence, which names the folder.
		if (err instanceof UserInputError || folderError(err)) throw err;
		const code = err instanceof ChainlakeError ? err.code : "INVALID_ARGS";
		throw new UserInputError(code, err instanceof Error ? err.message : String(err));
	}
}

/**
 * A usage made from a parseArgs options object: the synopsis, then each flag with its default.
 * For the benchmarks, whose flags are few and said in their file's comment; the commands a user
 * runs write theirs out, with what each flag means and its environment twin.
 */
export function flagUsage(
	synopsis: string,
	options: Record<string, { type: "string" | "boolean"; default?: unknown; multiple?: boolean }>,
): string {
	const lines = Object.entries(options).map(([name, o]) => {
		const flag = `--${name}${o.type === "string" ? " <value>" : ""}`;
		const notes = [
			o.multiple ? "repeatable" : "",
			o.default !== undefined && o.default !== false ? `default ${o.default}` : "",
		];
		const note = notes.filter(Boolean).join("; ");
		return `  ${flag.padEnd(28)}${note ? `(${note})` : ""}`.trimEnd();
	});
	return [`usage: ${synopsis}`, ...lines].join("\n");
}

/** The flags every command takes, handled here rather than by its parser. */
const COMMON_FLAGS = `  --help, -h             this text
  --debug                on a failure, print its stack too (or CHAINLAKE_DEBUG=1)`;

let started: CliSpec | null = null;

/**
 * Answers --help (usage on stdout, exit 0) and installs the error path for the rest of the
 * process. Returns the arguments to parse. Call it before parsing anything.
 */
export function startCli(spec: CliSpec): string[] {
	const raw = process.argv.slice(2);
	if (wantsHelp(raw)) {
		process.stdout.write(`${spec.usage.trimEnd()}\n${COMMON_FLAGS}\n`);
		process.exit(0);
	}
	if (!started) {
		process.on("uncaughtException", (err) => fail(err));
		process.on("unhandledRejection", (err) => fail(err));
	}
	started = spec;
	return cliArgs(raw);
}

/**
 * Runs a command's `main` behind startCli. main's number is the exit status; a main that returns
 * nothing leaves the process running (a server) until something exits it.
 */
export function runCli(spec: CliSpec, main: (argv: string[]) => Promise<number | undefined>): void {
	const argv = startCli(spec);
	main(argv).then((code) => {
		if (code !== undefined) process.exit(code);
	}, fail);
}

let failing = false;
/** Prints the failure's sentence (and with --debug its stack) and exits with its status. */
function fail(err: unknown): void {
	// A second error while the first is being explained (a server's sockets closing, say) adds nothing.
	if (failing) return;
	failing = true;
	const spec = started ?? { usage: "" };
	explainFailure(err, spec)
		// Explaining must not be what hangs a server: failing that, the error as it is.
		.catch(() => ({ lines: [`error: ${err instanceof Error ? err.message : String(err)}`], code: EXIT_FAILURE }))
		.then(({ lines, code }) => {
			process.stderr.write(`${lines.join("\n")}\n`);
			if (debugOn(process.argv.slice(2)) && err instanceof Error) {
				process.stderr.write(`${err.stack ?? err.message}\n`);
				if (err.cause !== undefined) process.stderr.write(`cause: ${String(err.cause)}\n`);
			} else if (code === EXIT_FAILURE && !(err instanceof ChainlakeError) && !isKnown(err))
				process.stderr.write("(run again with --debug for the stack)\n");
			process.exit(code);
		});
}

const KNOWN_CODES = new Set(["EADDRINUSE", "EADDRNOTAVAIL", "EACCES", "EPERM", "EROFS", "ENOTDIR", "EEXIST"]);
const isKnown = (err: unknown) => KNOWN_CODES.has((err as NodeJS.ErrnoException)?.code ?? "") || isDiskFull(err);

const DATA_DIR_FLAG = "--data-dir (or CHAINLAKE_DATA_DIR)";

/** The sentence (one or two lines) and exit status for an error a command met. */
export async function explainFailure(err: unknown, spec: CliSpec): Promise<{ lines: string[]; code: number }> {
	const e = err as NodeJS.ErrnoException & { address?: string; port?: number; path?: string };
	let dataDir: string | undefined;
	try {
		dataDir = spec.dataDir?.();
	} catch {
		// A script's folder not yet known when it failed (a `const` still before its line).
	}
	if (err instanceof UserInputError) return { lines: [`error: ${err.message}`], code: EXIT_USAGE };
	// node:util parseArgs: an unknown flag, a missing value, a value that looks like a flag.
	if (typeof e?.code === "string" && e.code.startsWith("ERR_PARSE_ARGS")) {
		// Its advice on positionals starting with '-' is for programs that take some; ours rarely do.
		const message = e.message.replace(/\. To specify a positional argument.*$/s, "");
		return { lines: [`error: ${message}`, spec.usage.trimEnd()], code: EXIT_USAGE };
	}
	if (!(err instanceof ChainlakeError) && isDiskFull(err)) err = await diskFullError(dataDir ?? ".", err);
	// A file that cannot be read because of its folder (the key file, say) is the folder's sentence.
	const folder = folderError(err);
	if (folder && folder !== err) return explainFailure(folder, spec);
	if (err instanceof ChainlakeError) {
		// The code stays in the line: it is what logs are searched for, and what the README lists.
		const line = `error [${err.code}]: ${err.message}`;
		if (err.code === "RPC_UNREACHABLE") {
			return {
				lines: [
					line,
					"check that the node is running and that its URL (--rpc, --follow or CHAINLAKE_RPC_URL) is right",
				],
				code: EXIT_FAILURE,
			};
		}
		return { lines: [line], code: EXIT_FAILURE };
	}
	const where = e.path ?? dataDir ?? "the data folder";
	switch (e?.code) {
		case "EADDRINUSE":
			return {
				lines: [
					`error: port ${e.port ?? ""} on ${e.address ?? "this host"} is taken by another process`,
					`stop that process, or pick another port with ${spec.portFlag ?? "--port (or PORT)"}`,
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
			if (e.syscall === "listen" || e.syscall === "bind")
				return {
					lines: [
						`error: not allowed to listen on port ${e.port ?? ""} (ports below 1024 need root)`,
						`pick another port with ${spec.portFlag ?? "--port (or PORT)"}`,
					],
					code: EXIT_FAILURE,
				};
			return {
				lines: [
					`error: cannot write ${where}: ${e.code === "EROFS" ? "read-only file system" : "permission denied"}`,
					`pick a folder you can write with ${spec.dataDirFlag ?? DATA_DIR_FLAG}, or fix its permissions`,
				],
				code: EXIT_FAILURE,
			};
		case "ENOTDIR":
		case "EEXIST":
			return {
				lines: [
					`error: ${fileOnTheWay(where)} is a file, not a folder`,
					`point ${spec.dataDirFlag ?? DATA_DIR_FLAG} at a folder, or move the file away`,
				],
				code: EXIT_FAILURE,
			};
	}
	const message = err instanceof Error ? err.message : String(err);
	return { lines: [`error: ${message}`], code: EXIT_FAILURE };
}

const FOLDER_CODES = new Set(["EACCES", "EPERM", "EROFS", "ENOTDIR", "EEXIST"]);
/** The file system's error about a folder in `err` or its cause, if any (not a listen's EACCES). */
function folderError(err: unknown): NodeJS.ErrnoException | undefined {
	for (const e of [err, (err as Error | undefined)?.cause] as NodeJS.ErrnoException[]) {
		if (e?.syscall !== undefined && e.syscall !== "listen" && e.syscall !== "bind" && FOLDER_CODES.has(e.code ?? ""))
			return e;
	}
	return undefined;
}

/** The file in the way of a path that should be (or lie under) a folder: the path or its nearest existing parent. */
function fileOnTheWay(path: string): string {
	for (let p = path; ; p = dirname(p)) {
		try {
			if (statSync(p).isFile()) return p;
		} catch {}
		if (dirname(p) === p) return path;
	}
}

/**
 * Makes `dir` and checks a file can be written in it, so a command that would otherwise meet the
 * folder only inside a retry loop (a follower logs and retries every step) stops at start with
 * the folder sentence. Throws the file system's error, its `path` set to the folder.
 */
export function ensureWritableFolder(dir: string): void {
	try {
		mkdirSync(dir, { recursive: true });
		const probe = join(dir, `.chainlake-write-check-${process.pid}`);
		writeFileSync(probe, "");
		unlinkSync(probe);
	} catch (err) {
		throw Object.assign(err as NodeJS.ErrnoException, { path: dir });
	}
}

/** Where `npm start` keeps its demo chain (CHAINLAKE_DEMO_DIR, default data/demo). */
export const demoDir = (): string => process.env.CHAINLAKE_DEMO_DIR || join("data", "demo");

/**
 * The folder a command that only reads (sql, serve without --follow) opens. --data-dir or
 * CHAINLAKE_DATA_DIR given: that one, always. Otherwise `data`, unless it holds no chain while
 * the demo's folder does: then the demo's, with a line saying so and naming the flag. Used rather
 * than only named because right after `npm start` the demo's chain is the only data there is and
 * these commands write nothing to it; the line keeps the choice visible, and a writer (serve
 * --follow) never falls back, as npm start wipes that folder at each start.
 */
export function readFolder(given: string | undefined, say: (line: string) => void): string {
	const chosen = given ?? process.env.CHAINLAKE_DATA_DIR;
	if (chosen) return chosen;
	const demo = demoDir();
	if (chainsIn("data").length > 0 || chainsIn(demo).length === 0) return "data";
	say(`no chain data under data/: reading the demo's folder ${demo} (npm start); --data-dir chooses another`);
	return demo;
}
