/** The small logging surface the pipeline needs; lines go to stderr so stdout stays data. */
export interface Logger {
	info(msg: string): void;
	warn(msg: string): void;
	error(msg: string): void;
	debug(msg: string): void;
}

export function createLogger(opts: { verbose?: boolean; quiet?: boolean } = {}): Logger {
	const line = (level: string, msg: string) => process.stderr.write(`${new Date().toISOString()} ${level} ${msg}\n`);
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
