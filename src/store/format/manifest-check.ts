import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { DATASETS, type DatasetName } from "../../extract/rows.js";
import { ChainlakeError } from "../../util/errors.js";
import { INDEX_NAMES, type IndexName } from "./indexes.js";
import { chainDir, manifestPath } from "./layout.js";
import type { Manifest } from "./records.js";

/**
 * The one check of a manifest's shape, for every reader (backfill, follower, reindex, synth,
 * the API's store, verify): a manifest that is not whole JSON, lacks a field, lists a dataset
 * this code does not know, or lists overlapping ranges is refused with MANIFEST_DAMAGED and a
 * message saying what to do, instead of being taken for "nothing stored yet" or failing later
 * with a TypeError. Unknown fields are kept (looseObject), so a save does not drop them.
 */
const count = z.number().int().nonnegative();
/**
 * What is wrong with an index file's `cuts` (format/key-parts.ts) beside its `parts`, if anything:
 * the one rule for a chunk's files and a run's.
 */
function cutsProblem(cuts: unknown = [], parts: unknown = 1): string | null {
	if (!Number.isInteger(parts) || (parts as number) < 1) return "parts must be a positive integer";
	const bounds = cuts as unknown[];
	if (
		!Array.isArray(cuts) ||
		!bounds.every((b, i) => typeof b === "string" && (i === 0 || (bounds[i - 1] as string) < b))
	)
		return "a file's cuts must be distinct and in order";
	if (cuts.length >= (parts as number))
		return "an index file has as many cuts as parts or more (cuts bound parts among its parts)";
	return null;
}
const chunkSchema = z
	.looseObject({
		from: count,
		to: count,
		traces: z.enum(["parity", "geth", "none"]),
		datasets: z.array(z.enum(DATASETS as [DatasetName, ...DatasetName[]])),
		rows: z.partialRecord(z.enum(DATASETS as [DatasetName, ...DatasetName[]]), count),
		indexes: z.array(z.enum(INDEX_NAMES as [IndexName, ...IndexName[]])).optional(),
		parts: z.partialRecord(z.enum(INDEX_NAMES as [IndexName, ...IndexName[]]), z.number().int().positive()).optional(),
		cuts: z.partialRecord(z.enum(INDEX_NAMES as [IndexName, ...IndexName[]]), z.array(z.string())).optional(),
		first_parent_hash: z.string(),
		last_hash: z.string(),
		gen: count.optional(),
	})
	.refine((c) => c.from <= c.to, { error: "a range ends before it starts" })
	.superRefine((c, ctx) => {
		for (const [i, cuts] of Object.entries(c.cuts ?? {})) {
			const problem = cutsProblem(cuts, c.parts?.[i as IndexName]);
			if (problem) ctx.addIssue({ code: "custom", path: ["cuts", i], message: problem });
		}
	});
const ghostSchema = z.looseObject({
	from: count,
	to: count,
	last_hash: z.string(),
	gen: count.optional(),
	hashes: z.array(z.string()).optional(),
});
const manifestSchema = z.looseObject({
	version: z.union([z.literal(1), z.literal(2), z.literal(3)], {
		error: "version must be 1, 2 or 3 (the ones this chainlake reads)",
	}),
	chain: z.string(),
	chain_number: count,
	// Checked one by one below: zod over 20 000 chunks takes a quarter of a second, which the
	// API's store would spend at every manifest change.
	chunks: z.array(z.unknown()),
	ghosts: z.array(ghostSchema).optional(),
	final_through: z.number().int().optional(),
	generation: count.optional(),
	partition_size: z.number().int().positive().optional(),
	compact_rows: z.number().int().positive().optional(),
});

const DATASET_SET = new Set<string>(DATASETS);
const INDEX_SET = new Set<string>(INDEX_NAMES);
const isCount = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
/** chunkSchema's rules, fast: zod runs only on a chunk that fails them, for its message. */
function soundChunk(c: unknown): boolean {
	if (typeof c !== "object" || c === null) return false;
	const e = c as Record<string, unknown>;
	const rows = e.rows as Record<string, unknown> | null;
	return (
		isCount(e.from) &&
		isCount(e.to) &&
		(e.from as number) <= (e.to as number) &&
		(e.traces === "parity" || e.traces === "geth" || e.traces === "none") &&
		Array.isArray(e.datasets) &&
		e.datasets.every((d) => DATASET_SET.has(d)) &&
		typeof rows === "object" &&
		rows !== null &&
		!Array.isArray(rows) &&
		Object.entries(rows).every(([k, v]) => DATASET_SET.has(k) && isCount(v)) &&
		(e.indexes === undefined || (Array.isArray(e.indexes) && e.indexes.every((i) => INDEX_SET.has(i)))) &&
		(e.parts === undefined ||
			(typeof e.parts === "object" &&
				e.parts !== null &&
				Object.entries(e.parts).every(([k, v]) => INDEX_SET.has(k) && Number.isInteger(v) && (v as number) >= 1))) &&
		(e.cuts === undefined ||
			(typeof e.cuts === "object" &&
				e.cuts !== null &&
				Object.entries(e.cuts).every(
					([k, v]) => INDEX_SET.has(k) && cutsProblem(v, (e.parts as Record<string, number> | undefined)?.[k]) === null,
				))) &&
		typeof e.first_parent_hash === "string" &&
		typeof e.last_hash === "string" &&
		(e.gen === undefined || isCount(e.gen))
	);
}

/** The previous generation of a chain's manifest, kept by every save (saveManifest). */
export const previousManifestPath = (dataDir: string, chain: string): string =>
	join(chainDir(dataDir, chain), "_manifest.prev.json");

/** What is wrong with a manifest's text for `chain`, or the manifest. Never throws. */
export function checkManifestText(
	text: string,
	chain: string,
): { manifest: Manifest; problem: null } | { manifest: null; problem: string } {
	if (!/\S/.test(text)) return { manifest: null, problem: "it is empty" };
	let json: unknown;
	try {
		json = JSON.parse(text);
	} catch (err) {
		return { manifest: null, problem: `it is not whole JSON (${(err as Error).message}): cut short or overwritten` };
	}
	const parsed = manifestSchema.safeParse(json);
	const issues = parsed.success ? [] : parsed.error.issues;
	if (parsed.success) {
		for (const [i, c] of parsed.data.chunks.entries()) {
			if (soundChunk(c)) continue;
			const r = chunkSchema.safeParse(c);
			if (!r.success) issues.push(...r.error.issues.map((x) => ({ ...x, path: ["chunks", i, ...x.path] })));
		}
		// A run's split into key-range parts (format/key-parts.ts), which every lookup of it reads.
		const runs = (json as { runs?: unknown }).runs;
		for (const [i, r] of (Array.isArray(runs) ? runs : []).entries()) {
			const run = r as { parts?: unknown; cuts?: unknown } | null;
			const problem = typeof run === "object" && run !== null ? cutsProblem(run.cuts, run.parts) : "not an object";
			if (problem) issues.push({ code: "custom", input: r, path: ["runs", i], message: problem });
		}
	}
	if (issues.length > 0) {
		const said = issues.slice(0, 3).map((i) => {
			const where = i.path.length > 0 ? i.path.join(".") : "the whole file";
			return `${where}: ${i.message.replace(/^Invalid input: expected (\w+), received undefined$/, "missing (expected $1)")}`;
		});
		const more = issues.length > 3 ? ` and ${issues.length - 3} more` : "";
		return { manifest: null, problem: `it is not a chainlake manifest (${said.join("; ")}${more})` };
	}
	// The parsed JSON itself, not zod's copy: same key order, so a save writes the same bytes.
	const m = json as Manifest;
	const number = Number(/^eip155-(\d+)$/.exec(chain)?.[1]);
	if (m.chain !== chain || (Number.isInteger(number) && m.chain_number !== number)) {
		return {
			manifest: null,
			problem: `it belongs to ${m.chain} (chain number ${m.chain_number}), not to ${chain} whose folder it is in: copied or moved from another chain's folder`,
		};
	}
	const sorted = [...m.chunks].sort((a, b) => a.from - b.from);
	for (let i = 1; i < sorted.length; i++) {
		const [a, b] = [sorted[i - 1], sorted[i]] as [Manifest["chunks"][number], Manifest["chunks"][number]];
		if (b.from <= a.to)
			return {
				manifest: null,
				problem: `it lists blocks ${b.from}..${Math.min(a.to, b.to)} twice (overlapping ranges)`,
			};
	}
	return { manifest: m, problem: null };
}

/** The previous generation, if it is there and sound (for recovery advice and `verify --restore-manifest`). */
export function readPreviousManifest(dataDir: string, chain: string): Manifest | null {
	let text: string;
	try {
		text = readFileSync(previousManifestPath(dataDir, chain), "utf8");
	} catch {
		return null;
	}
	return checkManifestText(text, chain).manifest;
}

/**
 * The error for a damaged manifest: names the file, what is wrong, and the way back (the
 * previous generation when it is sound, else a backup or a fresh backfill).
 */
export function manifestDamaged(dataDir: string, chain: string, problem: string): ChainlakeError {
	return new ChainlakeError(
		"MANIFEST_DAMAGED",
		`${manifestPath(dataDir, chain)} is damaged: ${problem}. ${manifestFix(dataDir, chain)}`,
	);
}

/** What to run about a damaged manifest. */
export function manifestFix(dataDir: string, chain: string): string {
	const prev = readPreviousManifest(dataDir, chain);
	const path = manifestPath(dataDir, chain);
	if (prev) {
		return `Its previous generation (${prev.generation ?? 0}) is kept in ${previousManifestPath(dataDir, chain)}: restore it with \`npm run verify -- --data-dir ${dataDir} --chain ${chain} --restore-manifest\`, which then names any range to fetch again`;
	}
	return `There is no sound previous generation (${previousManifestPath(dataDir, chain)}) to restore: put back a copy from a backup, or move it away (\`mv ${path} ${path}.damaged\`) and backfill the chain again (its data files are then removed as unlisted and fetched anew)`;
}
