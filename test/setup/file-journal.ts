import { appendFileSync } from "node:fs";
import { afterAll, beforeAll, expect } from "vitest";

/*
 * Each test file notes when its worker starts and ends it (the journal's path comes from
 * test/setup/worker-deaths.ts). A worker that dies (an out-of-memory abort, a native crash)
 * reports nothing of its own, and Vitest's "Worker exited unexpectedly" does not name the file:
 * the global teardown names the files that started and never ended.
 */
const journal = process.env.CHAINLAKE_TEST_JOURNAL;
let file = "";
beforeAll(() => {
	file = expect.getState().testPath ?? "(unknown file)";
	if (journal) appendFileSync(journal, `start ${process.pid} ${file}\n`);
});
afterAll(() => {
	if (journal) appendFileSync(journal, `end ${process.pid} ${file}\n`);
});
