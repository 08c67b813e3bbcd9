/**
 * Completes package-lock.json with every platform's native package (biome, DuckDB's bindings,
 * anvil, chdb), so that `npm ci` accepts the lock on Linux x64/arm64 (glibc or musl), macOS and
 * Windows alike.
 *
 * Why a script: npm writes a lock entry for an optional dependency only when it can read that
 * package's metadata from the registry, and the registry mirror of the machines this project is
 * built on holds only the Linux x64 packages of these three. `npm ci` elsewhere then stops at
 * "Missing: @biomejs/cli-darwin-arm64@ from lock file". Each missing entry is written from its
 * parent's `optionalDependencies` (exact versions, as these packages pin them) and from a
 * sibling already in the lock (license, engines, bin), with `os`/`cpu`/`libc` read off the
 * package name, which is how these projects name them. No `integrity` is written for them: npm
 * then checks nothing on those platforms but downloads the exact version. Where the registry has
 * the metadata, npm's own entry is kept untouched.
 *
 * Regenerate the lock from scratch: `rm -rf node_modules package-lock.json && npm install &&
 * npm run lock:platforms`. test/lockfile.test.ts checks the result.
 */
import { readFileSync, writeFileSync } from "node:fs";

type Entry = Record<string, unknown> & { optionalDependencies?: Record<string, string> };
const PLATFORM = /-(darwin|linux|win32|android|freebsd)-(x64|amd64|arm64|ia32|arm)(-musl|-gnu)?$/;

/** `os`, `cpu` and `libc` of a platform package, from its name; null if the name has none. */
export function platformOf(name: string): { os: string; cpu: string; musl: boolean } | null {
	const m = PLATFORM.exec(name);
	if (!m) return null;
	return { os: m[1] as string, cpu: m[2] === "amd64" ? "x64" : (m[2] as string), musl: m[3] === "-musl" };
}

/** Adds the missing platform entries to a parsed lock; returns the names it added. */
export function completeLock(lock: { packages: Record<string, Entry> }): string[] {
	const added: string[] = [];
	const pkgs = lock.packages;
	for (const parent of Object.values(pkgs)) {
		const optional = Object.entries(parent.optionalDependencies ?? {});
		const siblings = optional.map(([n]) => pkgs[`node_modules/${n}`]).filter((e): e is Entry => e != null);
		const model = siblings[0];
		if (!model) continue;
		for (const [name, version] of optional) {
			const key = `node_modules/${name}`;
			const p = platformOf(name);
			if (pkgs[key] || !p) continue;
			const { integrity: _unknown, os: _os, cpu: _cpu, libc: _libc, ...shape } = model;
			const entry: Entry = { ...shape, version, os: [p.os], cpu: [p.cpu] };
			const glibcNamed = siblings.some((s) => Array.isArray(s.libc));
			if (p.os === "linux" && (p.musl || glibcNamed)) entry.libc = [p.musl ? "musl" : "glibc"];
			pkgs[key] = entry;
			added.push(`${name}@${version}`);
		}
	}
	// npm keeps `packages` sorted by path; so do we, so that a later `npm install` changes nothing.
	lock.packages = Object.fromEntries(Object.entries(pkgs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
	return added;
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const path = "package-lock.json";
	const lock = JSON.parse(readFileSync(path, "utf8"));
	const added = completeLock(lock);
	writeFileSync(path, `${JSON.stringify(lock, null, "\t")}\n`);
	console.log(added.length ? `added ${added.length} entries:\n  ${added.join("\n  ")}` : "nothing missing");
}
