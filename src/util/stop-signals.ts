/**
 * SIGTERM and SIGINT in the CLIs: the first asks for a clean stop (`stop`, which ends the process
 * itself once done); a second one exits at once, like a crash, which the next start cleans up
 * after (start-up cleanup; the lock dies with its process). Repeats within REPEAT_WINDOW_MS of
 * the first are taken as the same request: a terminal's Ctrl-C reaches the whole process group,
 * and a wrapper in it (npm forwards SIGINT and SIGTERM to its script) may pass it on once more.
 */
export type StopSignal = "SIGINT" | "SIGTERM";

/** The shell's exit status of a process ended by the signal (128 + its number). */
export const SIGNAL_EXIT_CODE: Record<StopSignal, number> = { SIGINT: 130, SIGTERM: 143 };

const REPEAT_WINDOW_MS = 1000;

export function onStopSignal(stop: (signal: StopSignal) => void | Promise<void>, log: (line: string) => void): void {
	let first: number | null = null;
	const handle = (signal: StopSignal) => {
		if (first === null) {
			first = Date.now();
			log(`${signal}: stopping cleanly (send it again to exit at once)`);
			Promise.resolve()
				.then(() => stop(signal))
				.catch((err: unknown) => {
					log(`could not stop cleanly: ${err instanceof Error ? err.message : String(err)}`);
					process.exit(1);
				});
			return;
		}
		if (Date.now() - first < REPEAT_WINDOW_MS) return;
		log(`${signal} again: exiting at once; the next start cleans up what this run leaves`);
		process.exit(SIGNAL_EXIT_CODE[signal]);
	};
	process.on("SIGINT", handle);
	process.on("SIGTERM", handle);
}
