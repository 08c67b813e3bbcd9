import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireWriteLock, describeProcess } from "../../src/store/files/lock.js";
import { REPO_ROOT } from "../helpers/cli.js";

let dir: string;
beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "chainlake-lock-"));
});
afterAll(async () => {
	await rm(dir, { recursive: true, force: true });
});

/** A pid that belonged to a process that has exited. */
const deadPid = () => spawnSync(process.execPath, ["-e", "0"]).pid as number;

/** A separate process taking locks on command (test/store/lock-child.ts). */
class Worker {
	readonly child: ChildProcess;
	private readonly lines: AsyncIterator<string>;
	constructor(env: NodeJS.ProcessEnv = {}) {
		this.child = spawn(process.execPath, ["--import", "tsx", "test/store/lock-child.ts"], {
			cwd: REPO_ROOT,
			env: { ...process.env, ...env },
			stdio: ["pipe", "pipe", "inherit"],
		});
		this.lines = createInterface({ input: this.child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
	}
	get pid() {
		return this.child.pid as number;
	}
	/** Sends a command; its answer comes from `answer()`. */
	send(line: string) {
		this.child.stdin?.write(`${line}\n`);
	}
	async answer(): Promise<string> {
		const next = await this.lines.next();
		if (next.done) throw new Error(`lock worker ${this.pid} exited`);
		return next.value;
	}
	ask(line: string) {
		this.send(line);
		return this.answer();
	}
	kill(signal: NodeJS.Signals = "SIGTERM") {
		const closed = new Promise((r) => this.child.once("close", r));
		this.child.kill(signal);
		return closed;
	}
}

/** The most holders at once, from the "start <pid>"/"end <pid>" lines holders append. */
function maxConcurrentHolders(log: string): number {
	let now = 0;
	let max = 0;
	for (const line of log.split("\n").filter(Boolean)) {
		now += line.startsWith("start ") ? 1 : -1;
		max = Math.max(max, now);
	}
	return max;
}

/**
 * `processes` processes, all started and loaded, try to lock a fresh folder whose `_lock` holds a
 * dead pid at the same moment (each got the command before any acts on it, as near as pipes
 * allow), each holding 500 ms if it gets it; per round: how many got it, how many failed with another
 * error than DATA_DIR_LOCKED, and the most holders at once.
 */
async function race(rounds: number, processes: number, env: NodeJS.ProcessEnv = {}) {
	const workers = Array.from({ length: processes }, () => new Worker(env));
	try {
		// A no-op command round-trip: every worker has loaded the lock module.
		await Promise.all(workers.map((w) => w.ask("release")));
		const results: { got: number; failed: number; maxAtOnce: number }[] = [];
		for (let r = 0; r < rounds; r++) {
			const folder = join(dir, `race-${r}-${Date.now()}`);
			mkdirSync(folder);
			writeFileSync(join(folder, "_lock"), String(deadPid()));
			const log = join(folder, "holders.log");
			writeFileSync(log, "");
			for (const w of workers) w.send(`try ${folder} 500 ${log}`);
			const answers = await Promise.all(workers.map((w) => w.answer()));
			results.push({
				got: answers.filter((a) => a === "got").length,
				failed: answers.filter((a) => !/^(got|refused another run \(pid \d+\) is writing )/.test(a)).length,
				maxAtOnce: maxConcurrentHolders(readFileSync(log, "utf8")),
			});
		}
		return results;
	} finally {
		await Promise.all(workers.map((w) => w.kill()));
	}
}

describe("write lock", () => {
	it("lets one writer in at a time and frees on release", async () => {
		const release = await acquireWriteLock(dir);
		await expect(acquireWriteLock(dir)).rejects.toThrow(/another run \(pid \d+\) is writing/);
		// (Not read here: in the holding process, closing any descriptor of `_lock` drops the lock.)
		const other = new Worker();
		try {
			expect(await other.ask(`hold ${dir}`)).toBe(
				`refused another run (pid ${process.pid}) is writing ${dir} (${describeProcess(process.pid)}): wait for it to finish or stop it (Ctrl-C in its terminal, or kill ${process.pid}), or write to another folder`,
			);
			release();
			// The lock file stays (removing it would let two writers lock two different files), emptied.
			expect(readFileSync(join(dir, "_lock"), "utf8")).toBe("");
			expect(await other.ask(`hold ${dir}`)).toBe("held");
			expect(readFileSync(join(dir, "_lock"), "utf8")).toBe(String(other.pid));
			expect(await other.ask("release")).toBe("released");
		} finally {
			await other.kill();
		}
		(await acquireWriteLock(dir))();
	});

	it("takes the lock a run that was killed left behind", async () => {
		writeFileSync(join(dir, "_lock"), String(deadPid()));
		const release = await acquireWriteLock(dir);
		release();
	});

	it("refuses a second lock of the same folder in the same process, however it is named", async () => {
		const folder = join(dir, "same-process");
		mkdirSync(folder);
		symlinkSync(folder, join(dir, "same-process-link"));
		const release = await acquireWriteLock(folder);
		const refused = { code: "DATA_DIR_LOCKED", message: expect.stringContaining(`(pid ${process.pid})`) };
		await expect(acquireWriteLock(folder)).rejects.toMatchObject(refused);
		await expect(acquireWriteLock(join(dir, "same-process-link"))).rejects.toMatchObject(refused);
		await expect(acquireWriteLock(`${folder}/.`)).rejects.toMatchObject(refused);
		// The refusals did not drop the lock this process holds (closing any descriptor of the
		// file would): another process is still refused.
		const other = new Worker();
		try {
			expect(await other.ask(`hold ${folder}`)).toBe(
				`refused another run (pid ${process.pid}) is writing ${folder} (${describeProcess(process.pid)}): wait for it to finish or stop it (Ctrl-C in its terminal, or kill ${process.pid}), or write to another folder`,
			);
			release();
			expect(await other.ask(`hold ${folder}`)).toBe("held");
		} finally {
			await other.kill();
		}
		// Two at once from one process (the lock call is asynchronous): one gets it.
		const both = await Promise.allSettled([acquireWriteLock(folder), acquireWriteLock(folder)]);
		expect(both.map((b) => b.status).sort()).toEqual(["fulfilled", "rejected"]);
		for (const b of both) if (b.status === "fulfilled") b.value();
	});

	it("a stale release by a process that no longer holds the lock leaves the holder's lock alone", async () => {
		const folder = join(dir, "stale");
		const release = await acquireWriteLock(folder);
		release();
		const holder = new Worker();
		try {
			expect(await holder.ask(`hold ${folder}`)).toBe("held");
			release(); // stale: this process's lock is long gone
			expect(readFileSync(join(folder, "_lock"), "utf8")).toBe(String(holder.pid));
			await expect(acquireWriteLock(folder)).rejects.toMatchObject({
				code: "DATA_DIR_LOCKED",
				message: expect.stringContaining(`(pid ${holder.pid})`),
			});
			// The same from a third process.
			const third = new Worker();
			try {
				expect(await third.ask(`hold ${folder}`)).toMatch(new RegExp(`^refused another run \\(pid ${holder.pid}\\)`));
				expect(await third.ask("release")).toBe("released"); // released nothing: it holds nothing
				expect(await holder.ask("release")).toBe("released");
				expect(await holder.ask("release")).toBe("released"); // stale, in the old holder
				expect(await third.ask(`hold ${folder}`)).toBe("held");
				expect(await holder.ask("release")).toBe("released"); // stale again
				await expect(acquireWriteLock(folder)).rejects.toMatchObject({
					message: expect.stringContaining(`(pid ${third.pid})`),
				});
			} finally {
				await third.kill();
			}
		} finally {
			await holder.kill();
		}
	});

	it("frees the lock of a holder that is SIGKILLed at once", async () => {
		const folder = join(dir, "killed");
		const holder = new Worker();
		expect(await holder.ask(`hold ${folder}`)).toBe("held");
		await expect(acquireWriteLock(folder)).rejects.toMatchObject({ code: "DATA_DIR_LOCKED" });
		await holder.kill("SIGKILL");
		expect(readFileSync(join(folder, "_lock"), "utf8")).toBe(String(holder.pid));
		// No wait, no retry: the kernel dropped the dead process's lock.
		const release = await acquireWriteLock(folder);
		const other = new Worker();
		try {
			expect(await other.ask(`hold ${folder}`)).toMatch(new RegExp(`^refused another run \\(pid ${process.pid}\\)`));
		} finally {
			release();
			await other.kill();
		}
	});

	it("lets exactly one of 12 processes racing for a dead run's lock in, every round", async () => {
		const rounds = await race(8, 12);
		expect(rounds, JSON.stringify(rounds)).toEqual(rounds.map(() => ({ got: 1, failed: 0, maxAtOnce: 1 })));
	});
});
