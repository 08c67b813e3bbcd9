/**
 * Keeps README.md (and docs/*.md) honest: every `npm run <script>` they name exists in
 * package.json, every relative link points to a file that exists (and, with `#anchor`, to a
 * heading of that file), and README's contents list is its headings, in order.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const README = join(ROOT, "README.md");
const DOCS = readdirSync(join(ROOT, "docs"))
	.filter((f) => f.endsWith(".md"))
	.map((f) => join(ROOT, "docs", f));
const FILES = [README, ...DOCS];
const read = (f: string) => readFileSync(f, "utf8");

/** The text outside fenced code blocks (lines inside them become empty, so line numbers hold). */
function prose(md: string): string {
	let fenced = false;
	return md
		.split("\n")
		.map((line) => {
			if (/^\s*(```|~~~)/.test(line)) {
				fenced = !fenced;
				return "";
			}
			return fenced ? "" : line;
		})
		.join("\n");
}

interface Heading {
	level: number;
	text: string;
	slug: string;
}

/** GitHub's anchor for a heading: lower case, inline markup and punctuation dropped, spaces to hyphens. */
function slug(text: string): string {
	return text
		.replace(/`/g, "")
		.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
		.toLowerCase()
		.replace(/[^\p{L}\p{N}\s_-]/gu, "")
		.replace(/\s/g, "-");
}

function headings(md: string): Heading[] {
	const seen = new Map<string, number>();
	return [...prose(md).matchAll(/^(#{1,6})\s+(.+?)\s*#*\s*$/gm)].map((m) => {
		const text = (m[2] as string).trim();
		const base = slug(text);
		const n = seen.get(base) ?? 0;
		seen.set(base, n + 1);
		return { level: (m[1] as string).length, text, slug: n === 0 ? base : `${base}-${n}` };
	});
}

/**
 * The text less fenced blocks that build another project (their first line clones another
 * repository: the official PARSIQ clients' build steps run that project's npm scripts, not ours).
 */
function ownCommands(md: string): string {
	return md.replace(/^```[a-z]*\ngit clone https:\/\/[^\n]*\n[\s\S]*?^```$/gm, "");
}

/** Markdown links `[text](target)` outside code, minus web and mail links. */
function relativeLinks(md: string): string[] {
	const text = prose(md).replace(/`[^`\n]*`/g, "");
	return [...text.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
		.map((m) => m[1] as string)
		.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

describe("README and docs", () => {
	const scripts = Object.keys(
		(JSON.parse(read(join(ROOT, "package.json"))) as { scripts: Record<string, string> }).scripts,
	);

	it("name only npm scripts that package.json has", () => {
		const missing: string[] = [];
		for (const f of FILES) {
			for (const m of ownCommands(read(f)).matchAll(/npm run ([A-Za-z0-9:_-]+)/g)) {
				if (!scripts.includes(m[1] as string)) missing.push(`${relative(ROOT, f)}: npm run ${m[1]}`);
			}
		}
		expect(read(README)).toMatch(/npm run backfill/);
		expect(missing).toEqual([]);
	});

	it("link only to files and headings that exist", () => {
		const broken: string[] = [];
		let checked = 0;
		for (const f of FILES) {
			for (const link of relativeLinks(read(f))) {
				checked++;
				const [path = "", anchor] = link.split("#", 2);
				const target = path === "" ? f : resolve(dirname(f), decodeURI(path));
				if (!target.startsWith(ROOT) || !existsSync(target)) {
					broken.push(`${relative(ROOT, f)}: ${link} (no such file)`);
					continue;
				}
				if (anchor === undefined) continue;
				if (statSync(target).isDirectory() || !target.endsWith(".md")) {
					broken.push(`${relative(ROOT, f)}: ${link} (an anchor into a file that has no headings)`);
					continue;
				}
				if (!headings(read(target)).some((h) => h.slug === anchor)) {
					broken.push(`${relative(ROOT, f)}: ${link} (no heading #${anchor} in ${relative(ROOT, target)})`);
				}
			}
		}
		expect(checked).toBeGreaterThan(20);
		expect(broken).toEqual([]);
	});

	it("README's contents list its headings, in order, with their anchors", () => {
		const md = read(README);
		const all = headings(md);
		const at = all.findIndex((h) => h.text === "Contents");
		expect(at).toBeGreaterThan(-1);
		const after = all.slice(at + 1).filter((h) => h.level === 2 || h.level === 3);
		const section =
			prose(md)
				.split(/^## Contents\s*$/m)[1]
				?.split(/^## /m)[0] ?? "";
		const entries = [...section.matchAll(/^( *)- \[([^\]]+)\]\(#([^)]+)\)\s*$/gm)].map((m) => ({
			level: (m[1] as string).length === 0 ? 2 : 3,
			text: m[2] as string,
			slug: m[3] as string,
		}));
		expect(entries.map((e) => `${e.level} ${e.text} #${e.slug}`)).toEqual(
			after.map((h) => `${h.level} ${h.text.replace(/`/g, "")} #${h.slug}`),
		);
	});

	it("slugs headings as GitHub does", () => {
		expect(slug("Damaged files: `npm run verify`, and repair")).toBe("damaged-files-npm-run-verify-and-repair");
		expect(slug("The lake on object storage (S3)")).toBe("the-lake-on-object-storage-s3");
		expect(slug("Scaling out: one writer, many API processes, HAProxy in front")).toBe(
			"scaling-out-one-writer-many-api-processes-haproxy-in-front",
		);
	});
});
