/**
 * A process that takes chain write locks on command, for test/store/lock.test.ts: the race and
 * kill tests need real separate processes (the lock is between processes). Run with
 * `node --import tsx test/store/lock-child.ts`; LOCK_MODULE names another lock module to test
 * (an old copy, to measure the bug). Commands, one per stdin line, answered with one line:
 *   try <dir> <holdMs> <log>  acquire; if got, append "start <pid>", hold, append "end <pid>",
 *                             release; answers "got", "refused <message>" or "failed <error>"
 *   hold <dir>                acquire and keep it; answers "held" or "refused <message>"
 *   release                   release what `hold` took (again: a stale release); answers "released"
 */
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const modulePath = process.env.LOCK_MODULE ?? fileURLToPath(new URL("../../src/store/files/lock.ts", import.meta.url));
const { acquireWriteLock } = (await import(pathToFileURL(modulePath).href)) as {
	acquireWriteLock: (dir: string) => (() => void) | Promise<() => void>;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stdout.write(`${line}\n`);

let held: (() => void) | null = null;

async function attempt(dir: string): Promise<(() => void) | string> {
	try {
		return await acquireWriteLock(dir);
	} catch (err) {
		const { code, message } = err as { code?: string; message: string };
		return code === "DATA_DIR_LOCKED" ? `refused ${message}` : `failed ${code}: ${message}`;
	}
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
	const [cmd, dir = "", hold = "0", log = ""] = line.split(" ");
	if (cmd === "try") {
		const got = await attempt(dir);
		if (typeof got === "string") {
			say(got);
			continue;
		}
		// O_APPEND: each line lands whole at the end, whichever process writes it.
		appendFileSync(log, `start ${process.pid}\n`);
		await sleep(Number(hold));
		appendFileSync(log, `end ${process.pid}\n`);
		got();
		say("got");
	} else if (cmd === "hold") {
		const got = await attempt(dir);
		if (typeof got === "string") say(got);
		else {
			held = got;
			say("held");
		}
	} else if (cmd === "release") {
		held?.();
		say("released");
	}
}
