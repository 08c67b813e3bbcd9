/**
 * The lock file and package.json keep the promises README makes to a newcomer: `npm ci` works on
 * every platform we name (each locked package's platform binaries are all in the lock, so npm
 * never reports "Missing: … from lock file"), every locked package accepts every Node version
 * `engines` promises (no EBADENGINE), and nothing in the repository points outside it.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { completeLock } from "../scripts/lock-platforms.js";

type Entry = { version?: string; engines?: { node?: string }; optionalDependencies?: Record<string, string> };
const pkg = JSON.parse(readFileSync("package.json", "utf8"));
const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as { packages: Record<string, Entry> };

describe("package-lock.json", () => {
	it("lists every optional dependency of every locked package, at the version it asks for", () => {
		const missing: string[] = [];
		for (const [path, e] of Object.entries(lock.packages))
			for (const [name, range] of Object.entries(e.optionalDependencies ?? {})) {
				const dep = lock.packages[`node_modules/${name}`] ?? lock.packages[`${path}/node_modules/${name}`];
				if (!dep?.version || !semver.satisfies(dep.version, range)) missing.push(`${name}@${range} (of ${path})`);
			}
		expect(missing).toEqual([]);
	});

	it("is already complete: lock:platforms has nothing to add", () => {
		expect(completeLock(structuredClone(lock))).toEqual([]);
	});

	it("holds only packages that accept every Node version package.json promises", () => {
		const promised = pkg.engines.node as string;
		expect(semver.validRange(promised)).not.toBeNull();
		const refusing = Object.entries(lock.packages)
			.filter(([, e]) => e.engines?.node && !semver.subset(promised, e.engines.node))
			.map(([path, e]) => `${path} wants node ${e.engines?.node}`);
		expect(refusing).toEqual([]);
		expect(semver.satisfies(process.versions.node, promised)).toBe(true);
	});

	it("approves the install scripts of every locked package that has one", () => {
		const withScripts = Object.entries(lock.packages)
			.filter(([, e]) => (e as { hasInstallScript?: boolean }).hasInstallScript)
			.map(([path]) => path.replace(/^.*node_modules\//, ""));
		expect(withScripts.length).toBeGreaterThan(0);
		expect(withScripts.filter((n) => !(n in (pkg.allowScripts ?? {})))).toEqual([]);
	});
});

describe("the repository stands alone", () => {
	it("no tracked source, test, script or doc refers to a folder beside the repository", () => {
		const files = execFileSync("git", ["ls-files", "src", "scripts", "test", "docs", "README.md", "*.md"], {
			encoding: "utf8",
		})
			.split("\n")
			.filter((f) => /\.(ts|md|json)$/.test(f) && !f.startsWith("test/fixtures/ethereum-mainnet/"));
		expect(files.length).toBeGreaterThan(50);
		const offenders = files.filter((f) => /\.\.\/shared\b|\.\.\/\.\.\/\.\.\/shared/.test(readFileSync(f, "utf8")));
		expect(offenders).toEqual([]);
	});
});
