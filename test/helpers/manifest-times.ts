import { readFileSync, statSync } from "node:fs";
import type { Manifest } from "../../src/store/format/records.js";

/** A manifest file's mtime in ms (0 while there is none). */
export const manifestTime = (file: string) => statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0;

/**
 * When block `n` was committed to `file`: the mtime of the first manifest after the one of mtime
 * `seen` that holds it (polled every 2 ms; after a reorg the old manifest held a block `n` too).
 */
export async function storedAt(file: string, n: number, seen = 0): Promise<number> {
	for (const end = Date.now() + 30_000; Date.now() < end; await new Promise((r) => setTimeout(r, 2))) {
		const mtime = manifestTime(file);
		if (mtime === seen) continue;
		seen = mtime;
		const m = JSON.parse(readFileSync(file, "utf8")) as Manifest;
		if (m.chunks.some((c) => c.to >= n)) return mtime;
	}
	throw new Error(`block ${n} not in ${file} after 30 s`);
}

/** min, p50 and max of some durations in ms, as one line. */
export function spread(ms: number[]): string {
	const s = [...ms].sort((a, b) => a - b);
	const f = (x: number | undefined) => x?.toFixed(1);
	return `min ${f(s[0])}, p50 ${f(s[Math.floor(s.length / 2)])}, max ${f(s.at(-1))} ms over ${s.length}`;
}
