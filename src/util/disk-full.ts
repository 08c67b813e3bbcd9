import { statfs } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { ChainlakeError } from "./errors.js";

/**
 * A full disk (or an exhausted quota): Node reports it as `ENOSPC: no space left on device, write`
 * with no path, DuckDB as an IO Error in its message. Both are recognised here, so callers can
 * name the folder and its free space instead, and wait rather than retry at full speed.
 */
export function isDiskFull(err: unknown): boolean {
	const code = (err as NodeJS.ErrnoException | null)?.code;
	if (code === "ENOSPC" || code === "EDQUOT") return true;
	const message = err instanceof Error ? err.message : String(err);
	return /\b(ENOSPC|EDQUOT)\b|no space left on device|disk quota exceeded/i.test(message);
}

const size = (bytes: number) =>
	bytes >= 10 * 2 ** 30
		? `${(bytes / 2 ** 30).toFixed(1)} GiB`
		: bytes >= 2 ** 20
			? `${(bytes / 2 ** 20).toFixed(1)} MiB`
			: `${(bytes / 2 ** 10).toFixed(0)} KiB`;

/** "12.0 MiB free of 1.0 GiB" for the file system holding `dir` (or its nearest existing parent). */
export async function freeSpace(dir: string): Promise<string> {
	for (let d = resolve(dir); ; d = dirname(d)) {
		try {
			const s = await statfs(d);
			return `${size(s.bavail * s.bsize)} free of ${size(s.blocks * s.bsize)}`;
		} catch (err) {
			if ((err as NodeJS.ErrnoException).code !== "ENOENT" || dirname(d) === d)
				return `free space unknown (${(err as Error).message})`;
		}
	}
}

/** The error a CLI reports for a full disk under `dir`: the folder, its free space, what to do. */
export async function diskFullError(dir: string, err: unknown): Promise<ChainlakeError> {
	return new ChainlakeError(
		"DISK_FULL",
		`no space left for ${dir} (${await freeSpace(dir)}): free some space or use another --data-dir, then run the same command again to resume; the chunks committed so far are kept (${(err as Error).message})`,
		{ cause: err },
	);
}
