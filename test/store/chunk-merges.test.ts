import { describe, expect, it } from "vitest";
import { planChunkMerge } from "../../src/store/chunks/chunk-merges.js";
import { INDEX_NAMES } from "../../src/store/format/indexes.js";
import type { ChunkEntry, Manifest, RunEntry } from "../../src/store/format/records.js";

/**
 * Which settled chunks a dataset merge picks (src/store/chunk-merges.ts), on manifests alone:
 * the files and answers across real merges are checked in runs.test.ts.
 */
const SIZE = 10;
const chunk = (from: number, to: number, rows = 100, traces: ChunkEntry["traces"] = "parity"): ChunkEntry => ({
	from,
	to,
	traces,
	datasets: ["blocks", "transactions"],
	rows: { blocks: to - from + 1, transactions: rows },
	indexes: [],
	first_parent_hash: "",
	last_hash: `0x${to}`,
	gen: 1,
});
/** `n` one-partition chunks from block 0, final through the last. */
const manifest = (chunks: ChunkEntry[], runs: RunEntry[] = [], compactRows?: number): Manifest => ({
	version: 1,
	chain: "eip155-1",
	chain_number: 1,
	chunks,
	runs,
	partition_size: SIZE,
	final_through: Math.max(...chunks.map((c) => c.to)),
	...(compactRows ? { compact_rows: compactRows } : {}),
});
const partitions = (n: number, start = 0) =>
	Array.from({ length: n }, (_, i) => chunk((start + i) * SIZE, (start + i + 1) * SIZE - 1));
/** A run of every index over [from, to]. */
const runsOver = (from: number, to: number): RunEntry[] =>
	INDEX_NAMES.map((index) => ({
		index,
		from,
		to,
		last_hash: "",
		gen: 1,
		chunks: (to - from + 1) / SIZE,
		rows: 0,
		keys: 0,
	}));
const span = (g: ChunkEntry[] | null) => (g ? [g[0]?.from, g.at(-1)?.to] : null);

describe("planChunkMerge", () => {
	it("merges FAN_IN adjacent settled partitions inside one run, not before there are FAN_IN", () => {
		expect(planChunkMerge(manifest(partitions(3), runsOver(0, 29)))).toBeNull();
		expect(span(planChunkMerge(manifest(partitions(5), runsOver(0, 39))))).toEqual([0, 39]);
	});

	it("never across a run's edge, nor half inside a run", () => {
		// Runs of 4 partitions at 0..39 and 40..79: a group must be one of them.
		const m = manifest(partitions(8), [...runsOver(0, 39), ...runsOver(40, 79)]);
		expect(span(planChunkMerge(m))).toEqual([0, 39]);
		// Partitions 0..59 with a run over 20..59: 0..39 and 10..49 straddle its start.
		const straddling = manifest(partitions(6), runsOver(20, 59));
		expect(span(planChunkMerge(straddling))).toEqual([20, 59]);
		expect(planChunkMerge(manifest(partitions(5), runsOver(20, 59)))).toBeNull();
		// No run at all: a group is free (the merged chunk gets its own index files).
		expect(span(planChunkMerge(manifest(partitions(4))))).toEqual([0, 39]);
	});

	it("only chunks of one level: a merged chunk waits for FAN_IN - 1 more of its size", () => {
		const merged = chunk(0, 39);
		const m = manifest([merged, ...partitions(3, 4)], runsOver(0, 159));
		expect(planChunkMerge(m)).toBeNull();
		const m2 = manifest([chunk(0, 39), chunk(40, 79), chunk(80, 119), chunk(120, 159)], runsOver(0, 159));
		expect(span(planChunkMerge(m2))).toEqual([0, 159]);
	});

	it("a chunk holding compact_rows rows is left as it is", () => {
		const big = [chunk(0, 9, 5_000), ...partitions(4, 1)];
		const m = manifest(big, runsOver(0, 49), 5_000);
		expect(span(planChunkMerge(m))).toEqual([10, 49]);
		expect(planChunkMerge(manifest(partitions(4), runsOver(0, 39), 100))).toBeNull();
	});

	it("nothing unsettled: not final, a partial partition, or a gap", () => {
		const m = manifest(partitions(4), runsOver(0, 39));
		expect(planChunkMerge({ ...m, final_through: 38 })).toBeNull();
		const partial = [...partitions(3), chunk(30, 35), chunk(36, 39)];
		expect(planChunkMerge(manifest(partial, runsOver(0, 39)))).toBeNull();
		const gap = [...partitions(2), ...partitions(2, 3)];
		expect(planChunkMerge(manifest(gap))).toBeNull();
	});

	it("only chunks with the same datasets and trace source", () => {
		const mixed = [...partitions(3), chunk(30, 39, 100, "none")];
		expect(planChunkMerge(manifest(mixed))).toBeNull();
	});
});
