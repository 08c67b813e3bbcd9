import { execFileSync } from "node:child_process";
import {
	closeSync,
	constants,
	ftruncateSync,
	mkdirSync,
	openSync,
	readFileSync,
	realpathSync,
	writeSync,
} from "node:fs";
import { basename, join } from "node:path";
import { lock } from "os-lock";
import { crashPoint } from "../../util/crash-point.js";
import { ChainlakeError } from "../../util/errors.js";

/**
 * One writer per chain folder: two runs would clean up each other's files and overwrite each
 * other's manifest.
 *
 * The lock is an operating-system record lock (os-lock: fcntl() on POSIX, also over NFS;
 * LockFileEx on Windows) on the folder's `_lock` file, taken without waiting. The kernel drops
 * it when its process exits, however it dies, so a killed run leaves no lock to take over and
 * there is nothing to race for. `_lock` is never removed: a writer locking a file another then
 * removes and a writer creating a new one would both hold "the" lock. It holds the holder's pid,
 * only for the message the others show (empty once released, a dead pid after a crash: both mean
 * nothing).
 *
 * Record locks belong to the process, not to the descriptor: in the holding process a second
 * lock call succeeds, and closing any descriptor of the file drops the lock. So a process locks a
 * folder once (`held` refuses a second time), and never opens `_lock` while it holds it.
 */
const held = new Set<string>();

/** The locked byte, past the pid: Windows locks are mandatory, and others must read the pid. */
const LOCKED_BYTE = 2 ** 30;

export async function acquireWriteLock(chainDir: string): Promise<() => void> {
	mkdirSync(chainDir, { recursive: true });
	// However the folder is named (a symlink, a trailing "/."), it is one lock.
	const key = realpathSync(chainDir);
	if (held.has(key)) throw locked(chainDir, process.pid);
	held.add(key);
	const path = join(key, "_lock");
	let fd: number;
	try {
		fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
	} catch (err) {
		held.delete(key);
		throw err;
	}
	try {
		await lock(fd, LOCKED_BYTE, 1, { exclusive: true, immediate: true });
	} catch (err) {
		// No other descriptor of this file is open in this process (`held`): closing ours drops nothing.
		closeSync(fd);
		held.delete(key);
		const code = (err as NodeJS.ErrnoException).code;
		if (code !== "EAGAIN" && code !== "EACCES" && code !== "EBUSY") {
			throw new ChainlakeError("DATA_DIR_LOCK_FAILED", `could not lock ${path}: ${(err as Error).message}`, {
				cause: err,
			});
		}
		throw locked(chainDir, await holderPid(path));
	}
	ftruncateSync(fd, 0);
	writeSync(fd, String(process.pid), 0);
	crashPoint("lock.acquired");
	let released = false;
	return () => {
		// Once only: a stale call must not close a descriptor number reused since.
		if (released) return;
		released = true;
		ftruncateSync(fd, 0);
		closeSync(fd); // drops the lock
		held.delete(key);
	};
}

function locked(chainDir: string, pid: number | null): ChainlakeError {
	if (pid === null) {
		return new DataDirLockedError(
			`another run is writing ${chainDir}: wait for it to finish or stop it, or write to another folder`,
			chainDir,
			null,
			null,
		);
	}
	const what = pid === process.pid ? "this process" : describeProcess(pid);
	return new DataDirLockedError(
		`another run (pid ${pid}) is writing ${chainDir}${what ? ` (${what})` : ""}: wait for it to finish or stop it (Ctrl-C in its terminal, or kill ${pid}), or write to another folder`,
		chainDir,
		pid,
		what,
	);
}

/** DATA_DIR_LOCKED, with the holder, for callers that say more (npm start names its own fix). */
export class DataDirLockedError extends ChainlakeError {
	constructor(
		message: string,
		readonly dir: string,
		readonly pid: number | null,
		readonly what: string | null,
	) {
		super("DATA_DIR_LOCKED", message);
		this.name = "DataDirLockedError";
	}
}

/**
 * What process `pid` is, for the refusal: the npm command of a chainlake script (`npm start`,
 * `npm run follow`, ...), else its command line, shortened; null when it cannot be read.
 */
export function describeProcess(pid: number): string | null {
	let argv: string[] = [];
	try {
		argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
	} catch {
		try {
			// No /proc (macOS, the BSDs): ps has it.
			argv = execFileSync("ps", ["-o", "command=", "-p", String(pid)], { encoding: "utf8", timeout: 1000 })
				.trim()
				.split(/\s+/)
				.filter(Boolean);
		} catch {
			return null;
		}
	}
	if (argv.length === 0) return null;
	const script = argv.map((a) => /(?:^|[/\\])scripts[/\\]([\w-]+)\.ts$/.exec(a)?.[1]).find(Boolean);
	if (script) return script === "start" ? "npm start" : `npm run ${script}`;
	const line = [basename(argv[0] as string), ...argv.slice(1)].join(" ");
	return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

/**
 * The pid the holder wrote. It writes it just after locking, so right after our refusal the file
 * may still be empty or hold a dead run's pid: read again for up to a second.
 */
async function holderPid(path: string): Promise<number | null> {
	for (let i = 0; i < 20; i++) {
		let pid = Number.NaN;
		try {
			pid = Number(readFileSync(path, "utf8"));
		} catch {}
		if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) return pid;
		await new Promise((r) => setTimeout(r, 50));
	}
	return null;
}

function isAlive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch (err) {
		return (err as NodeJS.ErrnoException).code === "EPERM";
	}
}
