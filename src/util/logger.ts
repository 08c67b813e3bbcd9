import { resolve, sep } from "node:path";

/** The small logging surface the pipeline needs; lines go to stderr so stdout stays data. */
export interface Logger {
	info(msg: string): void;
	warn(msg: string): void;
	error(msg: string): void;
	debug(msg: string): void;
}

/**
 * `dataDir`: files are named relative to the data folder in every line (issue 27), whatever text
 * carried their absolute path (an error of DuckDB's or of the file system included).
 */
export function createLogger(opts: { verbose?: boolean; quiet?: boolean; dataDir?: string } = {}): Logger {
	const inside = opts.dataDir === undefined ? undefined : `${resolve(opts.dataDir)}${sep}`;
	const line = (level: string, msg: string) =>
		process.stderr.write(
			`${new Date().toISOString()} ${level} ${inside === undefined ? msg : msg.replaceAll(inside, "")}\n`,
		);
	return {
		info: (msg) => opts.quiet || line("info", msg),
		warn: (msg) => line("WARN", msg),
		error: (msg) => line("ERROR", msg),
		debug: (msg) => opts.verbose && line("debug", msg),
	};
}

/** For tests and library use: collects lines instead of printing them. */
export function createMemoryLogger(): Logger & { lines: string[] } {
	const lines: string[] = [];
	const push = (level: string) => (msg: string) => {
		lines.push(`${level} ${msg}`);
	};
	return { lines, info: push("info"), warn: push("warn"), error: push("error"), debug: push("debug") };
}
