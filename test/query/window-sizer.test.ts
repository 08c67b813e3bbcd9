import { describe, expect, it } from "vitest";
import { windowSizer } from "../../src/query/list.js";
import type { KeySpan } from "../../src/query/store/store.js";
import { MARK_ROWS } from "../../src/store/indexes/key-filter.js";

/**
 * The windows of a busy key's pages (query/list.ts windowSizer) over files whose filters count and
 * mark the key's rows as the writer does (store/indexes/key-filter.ts): checked against the rows
 * themselves. index-listing.test.ts checks the pages read through them against plain queries.
 */

/** A busy file's span as its filter tells it: rows in id order (so in block order), the block of every MARK_ROWS-th, and the last's. */
function busySpan(from: number, to: number, blocks: number[]): KeySpan {
	const marks = blocks.filter((_, i) => i % MARK_ROWS === 0 || i === blocks.length - 1);
	return { from, to, rows: blocks.length, marks };
}

/** A seeded generator (mulberry32): the same rows every run. */
function random(seed: number) {
	let a = seed;
	return () => {
		a = (a + 0x6d2b79f5) | 0;
		let t = Math.imul(a ^ (a >>> 15), 1 | a);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/** Rows over [from, to], denser toward the end as a chain's activity grows (about `n` of them). */
function rampRows(from: number, to: number, n: number, rand: () => number): number[] {
	const out: number[] = [];
	for (let b = from; b <= to; b++) {
		const mean = (n * 7.5 * ((b - from + 1) / (to - from + 1)) ** 6.5) / (to - from + 1);
		for (let k = Math.floor(mean + rand()); k > 0; k--) out.push(b);
	}
	return out;
}

describe("windows of a busy key's page", () => {
	const rand = random(26);
	// Three files: one the key is quiet in, one it is busy in on a ramp, one it is absent from, one busy.
	const quiet = rampRows(0, 999, 300, rand);
	const ramp = rampRows(1_000, 4_999, 40_000, rand);
	const heavy = rampRows(6_000, 6_999, 30_000, rand);
	const spans: KeySpan[] = [
		{ from: 0, to: 999, rows: "few" },
		busySpan(1_000, 4_999, ramp),
		{ from: 5_000, to: 5_999, rows: 0 },
		busySpan(6_000, 6_999, heavy),
	];
	const all = [...quiet, ...ramp, ...heavy];
	const inside = (w: [number, number]) => all.filter((b) => b >= w[0] && b <= w[1]).length;

	for (const desc of [false, true])
		for (const [lo, hi] of [
			[0, 6_999],
			[1_200, 6_500],
			[4_990, 6_010],
		] as const)
			for (const need of [1, 101, 1_001])
				it(`${desc ? "newest" : "oldest"} first over ${lo}..${hi}, ${need} rows a page: contiguous windows, the first holding the page`, () => {
					const next = windowSizer(spans, lo, hi, desc, 1_024);
					const windows: [number, number][] = [];
					let got = 0;
					for (let w = next(need); w; w = next(need)) {
						windows.push(w);
						got += inside(w);
					}
					// Together they cover every block from the page's edge to the last file with rows, in order, once.
					const edges = desc ? windows.map(([a, b]): [number, number] => [b, a]) : windows;
					expect(edges[0]?.[0]).toBe(desc ? hi : lo);
					for (let k = 1; k < edges.length; k++) {
						const [start] = edges[k] as [number, number];
						const [, end] = edges[k - 1] as [number, number];
						expect(start).toBe(end + (desc ? -1 : 1));
					}
					expect(got).toBe(all.filter((b) => b >= lo && b <= hi).length);
					// The first window holds the page, where the page's edge starts in a busy file with that many rows.
					const first = windows[0] as [number, number];
					const there = all.filter((b) => b >= lo && b <= hi);
					const busyAtEdge = (desc ? heavy : ramp).some((b) => b === (desc ? there.at(-1) : there[0]));
					if (busyAtEdge && there.length >= need) expect(inside(first)).toBeGreaterThanOrEqual(need);
					// And not much more than it needs: the marks place it within two marks' rows.
					if (busyAtEdge) expect(inside(first)).toBeLessThanOrEqual(Math.ceil(need * 1.5) + 2 * MARK_ROWS);
				});

	it("a quiet file is read whole, and no window is spent on a file the key is absent from", () => {
		const next = windowSizer(spans, 0, 6_999, false, 1_024);
		expect(next(101)).toEqual([0, 999]);
		const windows: [number, number][] = [];
		for (let w = next(101); w; w = next(101)) windows.push(w);
		expect(windows[0]?.[0]).toBe(1_000);
		expect(windows.length).toBeGreaterThan(3);
		expect(windows.filter(([a, b]) => a >= 5_000 && b <= 5_999)).toEqual([]);
		expect(windows.at(-1)?.[1]).toBe(6_999);
	});
});
