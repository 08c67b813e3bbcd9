import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { crashPoint } from "../util/crash-point.js";
import { ChainlakeError } from "../util/errors.js";

/**
 * One writer per chain folder: two runs would clean up each other's files and overwrite each
 * other's manifest. The lock file holds the owner's pid; a lock whose process is gone (a run
 * that was killed) is taken over.
 */
export function acquireWriteLock(chainDir: string): () => void {
	mkdirSync(chainDir, { recursive: true });
	const path = join(chainDir, "_lock");
	for (let attempt = 0; attempt < 2; attempt++) {
		try {
			writeFileSync(path, String(process.pid), { flag: "wx" });
			crashPoint("lock.acquired");
			return () => rmSync(path, { force: true });
		} catch (err) {
			if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
			const owner = Number(readFileSync(path, "utf8"));
			if (Number.isInteger(owner) && owner > 0 && isAlive(owner)) {
				throw new ChainlakeError(
					"DATA_DIR_LOCKED",
					`another run (pid ${owner}) is writing ${chainDir}: wait for it to finish, or stop it`,
				);
			}
			rmSync(path, { force: true });
			crashPoint("lock.taken-over");
		}
	}
	throw new ChainlakeError("DATA_DIR_LOCKED", `could not lock ${chainDir}`);
}

function isAlive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch (err) {
		return (err as NodeJS.ErrnoException).code === "EPERM";
	}
}
