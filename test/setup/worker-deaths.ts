import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Global setup: a journal the test files write to (test/setup/file-journal.ts); at the end, the
 * files that did not reach the end of their afterAll hooks are named with their worker's pid:
 * a worker that died (out of memory, a native crash) is among them, so a crash in CI says where
 * it happened.
 */
export default function setup() {
	const dir = mkdtempSync(join(tmpdir(), "chainlake-test-journal-"));
	const journal = join(dir, "files.log");
	process.env.CHAINLAKE_TEST_JOURNAL = journal;
	return () => {
		const lines = existsSync(journal) ? readFileSync(journal, "utf8").split("\n") : [];
		const open = new Map<string, string>();
		for (const line of lines) {
			const [what, pid, ...rest] = line.split(" ");
			const key = `${pid} ${rest.join(" ")}`;
			if (what === "start") open.set(key, line);
			else if (what === "end") open.delete(key);
		}
		for (const key of open.keys())
			process.stderr.write(
				`test file started and did not reach the end of its afterAll hooks (its worker died, or a hook failed or timed out; pid ${key})\n`,
			);
		rmSync(dir, { recursive: true, force: true });
	};
}
