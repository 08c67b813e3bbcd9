import { relative, resolve } from "node:path";
import { ChainlakeError } from "../../util/errors.js";
import { partPaths } from "../format/key-parts.js";
import { partitionPath } from "../format/layout.js";
import { chunkFiles, GHOST_DATASET } from "../format/manifest.js";
import { isFileError, parquetShape } from "../format/parquet-shape.js";
import type { Manifest } from "../format/records.js";
import { repairCommand } from "./verify.js";
import { runRepairCommand } from "./verify-runs.js";

/*
 * A writer's read that failed on a damaged listed file (repair/): which file, which blocks, and
 * the command that repairs them, instead of DuckDB's words and an absolute path. For the writers'
 * steps that read files a damaged one may be among (merges, holder ranks): they stop, say this
 * once, and leave the work due (backfill) or retry with backoff (follower).
 */

/** A damaged listed file a writer met, and its repair. */
export interface Damage {
	/** Relative to the data folder. */
	file: string;
	/** A chunk's file, a ghost file (reorged-out blocks), or a merged index run's. */
	kind: "chunk" | "ghost" | "run";
	from: number;
	to: number;
	problem: string;
	/** The command that repairs it (with the writer stopped: it takes the chain's write lock). */
	command: string;
}

/** One line: the file, its blocks, what is wrong, and the command. */
export const damageLine = (d: Damage): string =>
	`${d.file} (blocks ${d.from}..${d.to}) is ${d.problem === "missing" || d.problem === "empty" ? d.problem : `damaged: ${d.problem}`}; repair it with \`${d.command}\``;

/** A writer's read failed on a damaged listed file: the error a user sees. */
export class DamagedFileError extends ChainlakeError {
	constructor(readonly damage: Damage) {
		super("FILE_DAMAGED", damageLine(damage));
		this.name = "DamagedFileError";
	}
}

/** Every listed file of `m` with its blocks and repair: chunks and ghosts by backfill, runs by reindex. */
function listedWithRepair(dataDir: string, m: Manifest) {
	const out: { path: string; kind: Damage["kind"]; from: number; to: number; command: string }[] = [];
	// (Not the key filters beside index files: no DuckDB reads them.)
	for (const c of m.chunks)
		for (const path of chunkFiles(dataDir, m.chain, c).filter((p) => p.endsWith(".parquet")))
			out.push({ path, kind: "chunk", from: c.from, to: c.to, command: repairCommand(dataDir, m.chain, c.from, c.to) });
	for (const g of m.ghosts ?? [])
		out.push({
			path: partitionPath(dataDir, m.chain, GHOST_DATASET, g),
			kind: "ghost",
			from: g.from,
			to: g.to,
			command: repairCommand(dataDir, m.chain, g.from, g.to),
		});
	for (const r of m.runs ?? [])
		for (const path of partPaths(partitionPath(dataDir, m.chain, r.index, r), r.parts))
			out.push({ path, kind: "run", from: r.from, to: r.to, command: runRepairCommand(dataDir, m.chain) });
	return out;
}

/**
 * The damaged listed file behind `err`, or null when `err` is no file error or names no listed
 * file. DuckDB quotes the path it failed on in the first line of its message; when it does not,
 * every listed file gets the cheap check (parquet-shape.ts: no DuckDB), and the first damaged one
 * is the answer.
 */
export async function damageBehind(dataDir: string, m: Manifest, err: unknown): Promise<Damage | null> {
	if (err instanceof DamagedFileError) return err.damage;
	if (!isFileError(err)) return null;
	const first = String((err as Error)?.message ?? err).split("\n")[0] ?? "";
	const files = listedWithRepair(dataDir, m);
	const named = files.filter((f) => first.includes(f.path) || first.includes(resolve(f.path)));
	for (const f of named.length > 0 ? named : files) {
		// A file DuckDB named that still looks whole has a damaged page (verify's full read finds it).
		const problem = (await parquetShape(f.path)) ?? (named.length > 0 ? "unreadable (a part of it is damaged)" : null);
		if (problem)
			return { file: relative(dataDir, f.path), kind: f.kind, from: f.from, to: f.to, problem, command: f.command };
	}
	return null;
}
