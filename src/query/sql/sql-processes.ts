import { type ChildProcess, fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { SqlSink } from "./result-columns.js";
import { type ChildMessage, type SqlJob, STOP } from "./sql-job.js";
import type { SqlLimits } from "./sql-limits.js";
import { SqlRefusedError, tooLarge } from "./sql-refusals.js";

/*
 * Where user SQL runs: child processes, each with its own DuckDB, one statement at a time, killed
 * at the deadline or past their memory cap and replaced (issue 27).
 *
 * Why processes and not worker threads: a statement DuckDB cannot interrupt (repeat('x',
 * 1500000000) spends 37 s in one function call) and memory DuckDB does not count (that string is
 * outside its buffer manager, so memory_limit never sees it: the API process grew from 0.41 to
 * 3.4 GB against a 512MB limit) can only be stopped from outside. A worker thread shares the
 * process's address space: its resourceLimits cap the V8 heap alone, not DuckDB's native memory;
 * its RSS cannot be told apart from the API's; and terminate() waits for the native call to
 * return, which is the very thing that does not happen. A process has its own RSS, which the
 * kernel reports (/proc/<pid>/status), and SIGKILL ends it at once, whatever it is doing, with
 * all its memory. The API process itself then never holds a statement's memory.
 *
 * The cost: a process start (~0.8 s, off the request's path but for the server's first
 * statement: processes are kept, the first statement starts one per slot, a killed one is
 * replaced at once) and the answer's rows crossing IPC (BENCHMARKS.md, "SQL in a process of
 * its own").
 */

/** What a SQL process may use on top of the statement's memory: Node, DuckDB's code, the rows in flight. */
export const PROCESS_ALLOWANCE_BYTES = 256 * 1024 * 1024;
/** How often a running process's RSS is read: it may pass its cap by what it allocates in this time. */
const RSS_POLL_MS = 20;
/** After its time budget, how long a statement has to end by DuckDB's own interrupt before its process is killed. */
export const KILL_GRACE_MS = 1000;
/** A process that is not ready within this is given up (a machine out of memory or processes). */
const START_TIMEOUT_MS = 20_000;

const CHILD = fileURLToPath(new URL(`./sql-child${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url));
/** tsx's loader by its path when the source runs as TypeScript (`--import tsx` would resolve from the cwd). */
const EXEC_ARGV = [
	"--max-old-space-size=256",
	...(import.meta.url.endsWith(".ts")
		? ["--import", pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href]
		: []),
];

/** DuckDB's size text ("512MB", "1GiB") in bytes (KB, MB… are powers of 1000 there, KiB… of 1024). */
export function sizeBytes(text: string): number {
	const m = /^(\d+(?:\.\d+)?)\s*([KMGT])(i?)B$/i.exec(text.trim());
	if (!m) throw new Error(`not a size: ${text}`);
	const power = "KMGT".indexOf((m[2] as string).toUpperCase()) + 1;
	return Math.round(Number(m[1]) * (m[3] ? 1024 : 1000) ** power);
}

/** A process's resident memory in bytes, or null where the kernel does not say (not Linux). */
export function rssBytes(pid: number): number | null {
	try {
		const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
		return m ? Number(m[1]) * 1024 : null;
	} catch {
		return null;
	}
}

const unavailable = (why: string) =>
	new SqlRefusedError(503, "SQL_UNAVAILABLE", `the statement could not run (${why}): retry in a few seconds`);

/** The answer of one statement, as runUserSql's, plus the peak RSS its process reached. */
export interface SqlProcessResult {
	elapsedMs: number;
	rows: number;
	parquet?: Buffer;
	peakRssBytes: number | null;
}

/**
 * The SQL processes of one API process: `run` takes a ready process (or starts one), hands it the
 * job, forwards its rows to `sink` (which counts the answer's bytes), and settles on its end, or
 * kills it at `limits.timeoutMs` + KILL_GRACE_MS (503 QUERY_TIMEOUT), past its memory cap
 * (400 SQL_MEMORY_LIMIT) or past the answer's bytes (400 RESPONSE_TOO_LARGE). The caller bounds
 * how many run at once (sql-slots.ts); up to `limits.concurrency` idle processes are kept.
 */
export function sqlProcesses(limits: SqlLimits) {
	const capBytes = sizeBytes(limits.memory) + PROCESS_ALLOWANCE_BYTES;
	const idle: Promise<ChildProcess>[] = [];
	const live = new Set<ChildProcess>();
	let closed = false;

	function start(): Promise<ChildProcess> {
		const child = fork(CHILD, [], {
			execArgv: EXEC_ARGV,
			serialization: "advanced",
			// No stdout: nothing a statement makes DuckDB print reaches the server's log (stderr: a crash's trace).
			stdio: ["ignore", "ignore", "inherit", "ipc"],
		});
		live.add(child);
		child.once("exit", () => live.delete(child));
		// A send to a process that just died is answered by its exit; the error itself must not throw.
		child.on("error", () => {});
		const ready = new Promise<ChildProcess>((resolve, reject) => {
			const timer = setTimeout(() => {
				child.kill("SIGKILL");
				reject(new Error(`not ready within ${START_TIMEOUT_MS / 1000} s`));
			}, START_TIMEOUT_MS);
			child.once("message", () => {
				clearTimeout(timer);
				resolve(child);
			});
			child.once("exit", (code, signal) => {
				clearTimeout(timer);
				reject(new Error(`its process exited (${signal ?? code}) before it was ready`));
			});
		});
		ready.catch(() => {});
		return ready;
	}

	/** A spare for the next statement, so a killed process's replacement starts now, not on the next request. */
	function replace() {
		if (!closed && idle.length < limits.concurrency) idle.push(start());
	}

	function keep(child: ChildProcess) {
		const rss = rssBytes(child.pid as number);
		// DuckDB's allocator may keep what a statement freed: a process that stays large (past half
		// its cap, and past what it may use on top of a statement) is renewed.
		const large = rss !== null && rss > Math.max(capBytes / 2, PROCESS_ALLOWANCE_BYTES);
		if (closed || idle.length >= limits.concurrency || large) {
			child.kill("SIGKILL");
			replace();
		} else idle.push(Promise.resolve(child));
	}

	let warmed = false;
	async function take(): Promise<ChildProcess> {
		// The first statement starts every slot's process: the next key to come finds one ready
		// (a start costs ~0.8 s, which a victim key's answer would otherwise pay).
		if (!warmed) {
			warmed = true;
			while (idle.length < limits.concurrency) idle.push(start());
		}
		const spare = idle.shift();
		if (spare) {
			const child = await spare.catch(() => null);
			if (child && child.exitCode === null && child.signalCode === null && child.connected) return child;
		}
		return start();
	}

	return {
		capBytes,
		async run(job: Omit<SqlJob, "limits">, sink?: Omit<SqlSink, "rows"> & { rows(rows: unknown[][]): number }) {
			if (closed) throw unavailable("the server is stopping");
			const child = await take().catch((err: Error) => {
				throw unavailable(`no SQL process: ${err.message}`);
			});
			return new Promise<SqlProcessResult>((resolve, reject) => {
				const started = performance.now();
				let bytes = 0;
				let peak: number | null = null;
				let settled = false;
				let overflow: SqlRefusedError | null = null;
				const settle = () => {
					settled = true;
					clearTimeout(deadline);
					clearInterval(watch);
					child.off("message", onMessage);
					child.off("exit", onExit);
				};
				const kill = (err: SqlRefusedError) => {
					if (settled) return;
					settle();
					child.kill("SIGKILL");
					replace();
					reject(err);
				};
				const onMessage = (m: ChildMessage) => {
					if (settled) return;
					if (m.type === "columns") sink?.columns(m.columns);
					else if (m.type === "rows" && !overflow) {
						bytes += sink?.rows(m.rows) ?? 0;
						if (bytes > limits.maxBytes) {
							// Past the answer's bytes: the process ends at its next chunk and is kept (a
							// process start saved on a common mistake), or is killed if it does not within the grace.
							overflow = tooLarge(bytes, limits);
							clearTimeout(deadline);
							deadline = setTimeout(() => kill(overflow as SqlRefusedError), KILL_GRACE_MS);
							try {
								child.send(STOP);
							} catch {}
						}
					} else if (m.type === "done" || m.type === "refused") {
						settle();
						keep(child);
						if (overflow) reject(overflow);
						else if (m.type === "refused") reject(new SqlRefusedError(m.status, m.code, m.message));
						else
							resolve({
								elapsedMs: m.elapsedMs,
								rows: m.rows,
								parquet: m.parquet && Buffer.from(m.parquet.buffer, m.parquet.byteOffset, m.parquet.byteLength),
								peakRssBytes: peak,
							});
					} else if (m.type === "failed") kill(overflow ?? unavailable("its process failed"));
				};
				const onExit = (code: number | null, signal: string | null) =>
					kill(unavailable(`its process stopped: ${signal ?? `exit ${code}`}`));
				let deadline = setTimeout(
					() =>
						kill(
							new SqlRefusedError(
								503,
								"QUERY_TIMEOUT",
								`the statement ran past its ${limits.timeoutMs} ms budget and its process was stopped after ${Math.round(performance.now() - started)} ms: filter on block_number ranges, aggregate, or add a LIMIT`,
							),
						),
					limits.timeoutMs + KILL_GRACE_MS,
				);
				const watch = setInterval(() => {
					const rss = rssBytes(child.pid as number);
					if (rss === null) return;
					peak = Math.max(peak ?? 0, rss);
					if (rss > capBytes)
						kill(
							new SqlRefusedError(
								400,
								"SQL_MEMORY_LIMIT",
								`the statement's process passed its memory cap (${limits.memory} for the statement and ${PROCESS_ALLOWANCE_BYTES / 1024 / 1024} MiB for the process, ${(rss / 1024 / 1024).toFixed(0)} MiB reached) and was stopped: filter or aggregate more, build smaller values, select fewer columns, or add a LIMIT`,
							),
						);
				}, RSS_POLL_MS);
				child.on("message", onMessage);
				child.once("exit", onExit);
				try {
					child.send({ ...job, limits } satisfies SqlJob);
				} catch {
					kill(unavailable("its process had stopped"));
				}
			});
		},
		/** Kills every SQL process (the app is closing). */
		close() {
			closed = true;
			for (const child of live) child.kill("SIGKILL");
			idle.length = 0;
		},
		/** Processes alive now, running or idle (tests). */
		pids: () => [...live].map((c) => c.pid as number),
	};
}

export type SqlProcesses = ReturnType<typeof sqlProcesses>;
