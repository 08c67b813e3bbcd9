/**
 * Keeps src/ in the shape issue 28 set (docs/architecture.md): the top-level folders follow the data
 * flow (a folder imports only from itself and the folders before it in FLOW), src/store's rooms
 * follow STORE_ROOMS the same way, no two files import each other through any chain (no import
 * cycle), and no folder holds more than MAX_FILES_PER_FOLDER source files directly.
 *
 * Imports are read as text (no compiler): every relative `import ... from`, `import type ... from`,
 * `export ... from`, side-effect `import "./x.js"` and dynamic `import("./x.js")`, over several
 * lines too. The first `describe` checks that reader on samples, so a miss shows as a failure.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SRC = join(ROOT, "src");

/** src's top-level folders, lowest first: each may import only from itself and those before it. */
const FLOW = [
	"util",
	"rpc",
	"extract",
	"store",
	"backfill",
	"query",
	"remote",
	"follow",
	"api",
	"cluster",
	"synth",
	"workload",
] as const;

/**
 * src/store's rooms (sub-folders), lowest first: a room imports only from itself and rooms before
 * it. Only the rooms that exist are checked; a sub-folder of src/store missing here is reported.
 */
const STORE_ROOMS = ["format", "delta", "files", "indexes", "holdings", "chunks", "retire", "repair"] as const;

const MAX_FILES_PER_FOLDER = 20;
const SOURCE_FILE = /\.(ts|tsx|mts|cts|js|mjs|cjs|sol)$/;
const CODE_FILE = /\.(ts|tsx|mts|cts)$/;

/** The relative specifiers one file imports (static, type-only, re-exports, dynamic). */
function relativeImports(source: string): string[] {
	const specs: string[] = [];
	// Statements start a line (after optional indentation); the clause before `from` holds no
	// quote or semicolon, which keeps a match inside one statement however many lines it spans.
	const fromClause = /^[ \t]*(?:import|export)\b[^;"'`]*?\bfrom\s*(["'])(\.{1,2}\/[^"'\n]*)\1/gm;
	const sideEffect = /^[ \t]*import\s*(["'])(\.{1,2}\/[^"'\n]*)\1/gm;
	const dynamic = /\bimport\s*\(\s*(["'])(\.{1,2}\/[^"'\n]*)\1\s*\)/g;
	for (const re of [fromClause, sideEffect]) {
		for (const m of source.matchAll(re)) specs.push(m[2] as string);
	}
	for (const m of source.matchAll(dynamic)) {
		const lineStart = source.lastIndexOf("\n", m.index) + 1;
		const before = source.slice(lineStart, m.index);
		if (/^\s*(\/\/|\*|\/\*)/.test(before)) continue; // a comment naming an import
		specs.push(m[2] as string);
	}
	return specs;
}

function listFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		return statSync(path).isDirectory() ? listFiles(path) : [path];
	});
}

function listDirs(dir: string): string[] {
	const subs = readdirSync(dir)
		.map((name) => join(dir, name))
		.filter((p) => statSync(p).isDirectory());
	return [dir, ...subs.flatMap(listDirs)];
}

/** A specifier's file: "./x.js" names x.ts under NodeNext. */
function resolveImport(from: string, spec: string): string | undefined {
	const base = resolve(dirname(from), spec);
	const stem = base.replace(/\.(js|mjs|cjs|jsx)$/, "");
	const candidates = [
		base,
		`${stem}.ts`,
		`${stem}.tsx`,
		`${stem}.mts`,
		`${stem}.cts`,
		join(base, "index.ts"),
		join(base, "index.js"),
	];
	return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

const rel = (p: string) => relative(SRC, p).split("\\").join("/");

interface Graph {
	/** file (relative to src) → the files it imports (relative to src) */
	edges: Map<string, Set<string>>;
	unresolved: string[];
}

function buildGraph(): Graph {
	const edges = new Map<string, Set<string>>();
	const unresolved: string[] = [];
	for (const file of listFiles(SRC).filter((f) => CODE_FILE.test(f))) {
		const targets = new Set<string>();
		for (const spec of relativeImports(readFileSync(file, "utf8"))) {
			const target = resolveImport(file, spec);
			if (!target) unresolved.push(`${rel(file)} imports ${spec}, which names no file`);
			else if (target.startsWith(SRC)) targets.add(rel(target));
		}
		edges.set(rel(file), targets);
	}
	return { edges, unresolved };
}

/** Strongly connected components with more than one file, or one file importing itself (Tarjan). */
function cycles(edges: Map<string, Set<string>>): string[][] {
	let next = 0;
	const index = new Map<string, number>();
	const low = new Map<string, number>();
	const stack: string[] = [];
	const onStack = new Set<string>();
	const found: string[][] = [];
	const visit = (v: string) => {
		index.set(v, next);
		low.set(v, next);
		next++;
		stack.push(v);
		onStack.add(v);
		for (const w of edges.get(v) ?? []) {
			if (!index.has(w)) {
				visit(w);
				low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
			} else if (onStack.has(w)) {
				low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
			}
		}
		if (low.get(v) === index.get(v)) {
			const component: string[] = [];
			let w: string;
			do {
				w = stack.pop() as string;
				onStack.delete(w);
				component.push(w);
			} while (w !== v);
			if (component.length > 1 || edges.get(v)?.has(v)) found.push(component.sort());
		}
	};
	for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);
	return found;
}

/** One shortest cycle through a component's first file, as "a → b → ... → a". */
function shortestCycle(component: string[], edges: Map<string, Set<string>>): string {
	const members = new Set(component);
	const start = component[0] as string;
	const cameFrom = new Map<string, string>();
	const queue = [start];
	while (queue.length > 0) {
		const v = queue.shift() as string;
		for (const w of [...(edges.get(v) ?? [])].sort()) {
			if (!members.has(w)) continue;
			if (w === start) {
				const path = [v];
				while (path[0] !== start) path.unshift(cameFrom.get(path[0] as string) as string);
				return [...path, start].join(" → ");
			}
			if (!cameFrom.has(w)) {
				cameFrom.set(w, v);
				queue.push(w);
			}
		}
	}
	return component.join(", ");
}

/** "store/format/manifest.ts" → "format"; undefined for a file directly in src/store. */
function storeRoom(file: string): string | undefined {
	const parts = file.split("/");
	return parts[0] === "store" && parts.length > 2 ? parts[1] : undefined;
}

describe("reading imports", () => {
	it("finds every kind of relative import, over several lines, and no bare or commented one", () => {
		const sample = [
			`import { a } from "./a.js";`,
			`import type { B } from "../b/b.js";`,
			"import {",
			"\ttype C,",
			"\td,",
			`} from "./c.js";`,
			`import e, * as f from './e.js';`,
			`export { g } from "./g.js";`,
			`export type { H } from "./h.js";`,
			`export * from "./i.js";`,
			`import "./side-effect.js";`,
			`const j = await import("./j.js");`,
			`\tconst { k } = await import(`,
			`\t\t"./k.js"`,
			"\t);",
			`import { readFile } from "node:fs";`,
			`import { z } from "zod";`,
			`// const x = await import("./commented.js");`,
			` * import { y } from "./in-a-doc-comment.js";`,
			`const s = "import { w } from './in-a-string.js'";`,
		].join("\n");
		expect(relativeImports(sample)).toEqual([
			"./a.js",
			"../b/b.js",
			"./c.js",
			"./e.js",
			"./g.js",
			"./h.js",
			"./i.js",
			"./side-effect.js",
			"./j.js",
			"./k.js",
		]);
	});

	it("reads a good share of src's imports (the reader is not blind)", () => {
		const { edges } = buildGraph();
		const count = [...edges.values()].reduce((n, s) => n + s.size, 0);
		expect(edges.size).toBeGreaterThan(100);
		expect(count).toBeGreaterThan(edges.size);
	});
});

describe("architecture of src/", () => {
	const { edges, unresolved } = buildGraph();

	it("every relative import names a file", () => {
		expect(unresolved, unresolved.join("\n")).toEqual([]);
	});

	it("has no import cycle", () => {
		const problems = cycles(edges).map(
			(c) => `import cycle among ${c.length} files (${c.join(", ")}):\n  ${shortestCycle(c, edges)}`,
		);
		expect(problems, `\n${problems.join("\n\n")}\n`).toEqual([]);
	});

	it("imports only from the same or an earlier folder of the flow", () => {
		const order = FLOW as readonly string[];
		const problems: string[] = [];
		for (const [from, tos] of edges) {
			const top = from.includes("/") ? (from.split("/")[0] as string) : "";
			if (!order.includes(top)) {
				problems.push(`src/${from} is in no folder of FLOW (${FLOW.join(" → ")}); add its folder there`);
				continue;
			}
			for (const to of tos) {
				const toTop = to.split("/")[0] as string;
				if (order.indexOf(toTop) > order.indexOf(top)) {
					problems.push(`src/${from} imports src/${to}: ${top} comes before ${toTop} in the flow`);
				}
			}
		}
		expect(problems, `\nflow: ${FLOW.join(" → ")}\n${problems.join("\n")}\n`).toEqual([]);
	});

	it("src/store's rooms import only from the same or an earlier room", () => {
		const rooms = STORE_ROOMS as readonly string[];
		const storeDir = join(SRC, "store");
		const problems: string[] = [];
		for (const name of readdirSync(storeDir)) {
			if (statSync(join(storeDir, name)).isDirectory() && !rooms.includes(name)) {
				problems.push(`src/store/${name} is no room of STORE_ROOMS (${STORE_ROOMS.join(" → ")}); add it there`);
			}
		}
		for (const [from, tos] of edges) {
			const fromRoom = storeRoom(from);
			if (fromRoom === undefined) continue;
			for (const to of tos) {
				const toRoom = storeRoom(to);
				if (toRoom !== undefined && rooms.indexOf(toRoom) > rooms.indexOf(fromRoom)) {
					problems.push(`src/${from} imports src/${to}: store/${fromRoom} comes before store/${toRoom}`);
				}
			}
		}
		expect(problems, `\nstore rooms: ${STORE_ROOMS.join(" → ")}\n${problems.join("\n")}\n`).toEqual([]);
	});

	it(`no folder holds more than ${MAX_FILES_PER_FOLDER} source files directly`, () => {
		const counts = new Map(
			listDirs(SRC).map((dir) => [
				relative(ROOT, dir).split("\\").join("/"),
				readdirSync(dir).filter((n) => SOURCE_FILE.test(n) && statSync(join(dir, n)).isFile()).length,
			]),
		);
		const problems = [...counts]
			.filter(([, count]) => count > MAX_FILES_PER_FOLDER)
			.map(([dir, count]) => `${dir} holds ${count} source files directly (at most ${MAX_FILES_PER_FOLDER})`);
		expect(problems, `\n${problems.join("\n")}\n`).toEqual([]);
	});
});
