import { chmodSync, mkdirSync, statfsSync } from "node:fs";
import { defineConfig } from "vitest/config";
import SlowFirstSequencer from "./test/setup/sequencer.js";

/**
 * The tests' temporary folders (os.tmpdir(): every mkdtemp of the tests, and the processes they
 * start) on a RAM file system where the machine has a large one: Linux's /dev/shm when it is a
 * tmpfs with 4 GiB free. Every data file and manifest is fsynced before its rename
 * (src/util/fsync.ts); on a disk those syncs were most of a many-chunk backfill's time (9 chunks:
 * 7.6 s on disk, 3.5 s on tmpfs), on tmpfs the same calls run and return at once. The code paths
 * are the same (test/store/fsync.test.ts still sees every sync under strace); disk-full.test.ts
 * mounts a tmpfs of its own anyway. A TMPDIR already set is kept, and elsewhere (a CI container's
 * 64 MiB /dev/shm, macOS) the system's temporary folder stays.
 */
function ramTmpdir(): string | undefined {
	if (process.env.TMPDIR || process.platform !== "linux") return undefined;
	try {
		const fs = statfsSync("/dev/shm");
		const TMPFS_MAGIC = 0x01021994;
		if (fs.type !== TMPFS_MAGIC || fs.bavail * fs.bsize < 4 * 2 ** 30) return undefined;
		const dir = "/dev/shm/chainlake-tests";
		mkdirSync(dir, { recursive: true });
		// Like /tmp: a child started as another user (test/cli/failures.test.ts) writes its tsx cache here.
		chmodSync(dir, 0o1777);
		return dir;
	} catch {
		return undefined;
	}
}
const tmp = ramTmpdir();
// Here too, not only in the workers' env: the global setup's journal and every child process inherit it.
if (tmp) process.env.TMPDIR = tmp;

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts"],
		// Tests start real anvil nodes and DuckDB; the CI machine has 2 cores.
		testTimeout: 120_000,
		hookTimeout: 120_000,
		// Three files at once on two cores: much of a file's time is waiting (for anvil, a
		// follower's poll, a child process, a deadline), and with two workers the cores sat idle
		// a fifth of the run (user+sys 1,074 s in 593 s). Measured, whole npm test on this
		// machine: 10 min 12 s with 2 workers, 8 min 05-46 s with 3 (docs/testing.md).
		maxWorkers: 3,
		// The slowest files first when Vitest has no timings of its own: test/setup/sequencer.ts.
		sequence: { sequencer: SlowFirstSequencer },
		env: tmp ? { TMPDIR: tmp } : {},
		// Names the file of a worker that died (Vitest does not): test/setup/worker-deaths.ts; the
		// scripts the tests start, as JavaScript: test/setup/compiled-scripts.ts.
		globalSetup: ["test/setup/worker-deaths.ts", "test/setup/compiled-scripts.ts", "test/setup/workload-template.ts"],
		setupFiles: ["test/setup/file-journal.ts"],
		// Each file's heap in the report: a file that grows toward the limit shows before it aborts.
		logHeapUsage: true,
	},
});
