import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

/*
 * No path of the server in anything a SQL statement answers (issue 27): DuckDB shows paths in
 * places a blocklist of functions would never cover — allowed_paths in duckdb_settings() and
 * current_setting() (every listed file, resolved), view definitions in duckdb_views() and
 * information_schema, error messages naming a file or the extension folder. So the runner gives
 * the instance neutral folders (NEUTRAL_DIRECTORIES: no secret, home or extension folder of this
 * machine appears), and every string of an answer, column name and error passes through a scrub
 * that writes each folder of the server as a placeholder. Parquet answers cannot be rewritten:
 * they are checked for the same folders instead (user-sql.ts).
 */

/** What the instance is told its home, secret and extension folders are: none of this machine. */
export const NEUTRAL_DIRECTORIES = {
	home_directory: "/nonexistent/home",
	secret_directory: "/nonexistent/secrets",
	extension_directory: "/nonexistent/extensions",
} as const;

/** The repository (or install) folder: node_modules, DuckDB's library and its extensions sit under it. */
const CODE_ROOT = fileURLToPath(new URL("../../../", import.meta.url)).replace(/\/$/, "");

/**
 * The server's folders a statement could see, each with its placeholder, longest first (so the
 * lake inside the code folder is written <lake>, not <code>/data): the lake as resolved and as
 * given, the answer's scratch folder, the code, the working folder and the home folder. A folder
 * of one character ("/") is left out: it would rewrite every path.
 */
export function serverPaths(lake: string, extra: Record<string, string> = {}): [string, string][] {
	const pairs: [string, string][] = [
		[lake, "<lake>"],
		[resolve(lake), "<lake>"],
		...Object.entries(extra).map(([placeholder, path]): [string, string] => [path, `<${placeholder}>`]),
		[CODE_ROOT, "<server>"],
		[process.cwd(), "<server>"],
		[homedir(), "<home>"],
	];
	for (const [path, placeholder] of [...pairs]) {
		try {
			pairs.push([realpathSync(path), placeholder]);
		} catch {}
	}
	const seen = new Set<string>();
	return pairs
		.map(([p, placeholder]): [string, string] => [p.replace(/\/+$/, ""), placeholder])
		.filter(([p]) => p.length > 1 && !seen.has(p) && seen.add(p))
		.sort((a, b) => b[0].length - a[0].length);
}

/** `text` with every server folder written as its placeholder. */
export function scrubText(text: string, paths: readonly [string, string][]): string {
	let out = text;
	for (const [path, placeholder] of paths) if (out.includes(path)) out = out.replaceAll(path, placeholder);
	return out;
}

/** A value of an answer (text, or lists and objects of them) with every string scrubbed. */
export function scrubValue(value: unknown, paths: readonly [string, string][]): unknown {
	if (typeof value === "string") return scrubText(value, paths);
	if (Array.isArray(value)) return value.map((v) => scrubValue(v, paths));
	if (value !== null && typeof value === "object" && !(value instanceof Uint8Array))
		return Object.fromEntries(Object.entries(value).map(([k, v]) => [scrubText(k, paths), scrubValue(v, paths)]));
	return value;
}
