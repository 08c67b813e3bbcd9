import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireWriteLock } from "../../src/store/lock.js";

let dir: string;
beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "chainlake-lock-"));
});
afterAll(async () => {
	await rm(dir, { recursive: true, force: true });
});

describe("write lock", () => {
	it("lets one writer in at a time and frees on release", () => {
		const release = acquireWriteLock(dir);
		expect(() => acquireWriteLock(dir)).toThrow(/another run \(pid \d+\) is writing/);
		release();
		expect(existsSync(join(dir, "_lock"))).toBe(false);
		acquireWriteLock(dir)();
	});

	it("takes over the lock of a run that was killed", () => {
		const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
		writeFileSync(join(dir, "_lock"), String(dead));
		const release = acquireWriteLock(dir);
		release();
	});
});
