import { describe, expect, it } from "vitest";
import { alignedChunks, partitionFileName } from "../../src/store/format/layout.js";
import { missingRanges } from "../../src/store/format/manifest.js";
import type { Manifest } from "../../src/store/format/records.js";

describe("layout", () => {
	it("cuts ranges at multiples of the partition size, wherever the run began", () => {
		expect(alignedChunks(0, 25, 10)).toEqual([
			[0, 9],
			[10, 19],
			[20, 25],
		]);
		expect(alignedChunks(7, 12, 10)).toEqual([
			[7, 9],
			[10, 12],
		]);
		expect(alignedChunks(5, 5, 10)).toEqual([[5, 5]]);
	});

	it("names files so they sort in chain order", () => {
		const names = [
			partitionFileName("logs", { from: 1000, to: 1999, last_hash: "0xabcdef0123" }),
			partitionFileName("logs", { from: 999, to: 999, last_hash: "0xffffffff00" }),
			partitionFileName("logs", { from: 0, to: 9, last_hash: "0x0000000000" }),
		];
		expect([...names].sort()).toEqual([names[2], names[1], names[0]]);
		expect(names[0]).toBe("logs_000000001000_000000001999_abcdef01.parquet");
	});

	it("finds the parts of a range no chunk covers", () => {
		const chunk = (from: number, to: number) => ({
			from,
			to,
			traces: "parity" as const,
			datasets: [],
			rows: {},
			first_parent_hash: "",
			last_hash: "",
		});
		const m: Manifest = { version: 1, chain: "eip155-1", chain_number: 1, chunks: [chunk(10, 19), chunk(30, 39)] };
		expect(missingRanges(m, 0, 50)).toEqual([
			[0, 9],
			[20, 29],
			[40, 50],
		]);
		expect(missingRanges(m, 12, 18)).toEqual([]);
		expect(missingRanges(m, 15, 35)).toEqual([[20, 29]]);
	});
});
