import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keccak256, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildKeyFilter, loadKeyFilter, saveKeyFilter, withBusyKeys } from "../../src/store/indexes/key-filter.js";

/** Keys as the lake has them: addresses (low 20 bytes of a Keccak-256) and 32-byte hashes. */
const hash = (i: number) => keccak256(toHex(`key ${i}`));
const address = (i: number) => `0x${hash(i).slice(-40)}`;
async function* batches(keys: string[]) {
	for (let i = 0; i < keys.length; i += 1000) yield keys.slice(i, i + 1000);
}

let dir: string;
beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "chainlake-filter-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("key filter", () => {
	for (const [kind, make] of [
		["addresses", address],
		["hashes", hash],
	] as const) {
		it(`${kind}: never misses a key it holds; about 1% false positives`, async () => {
			const inside = Array.from({ length: 20_000 }, (_, i) => make(i));
			const { filter } = await buildKeyFilter(batches(inside), inside.length);
			expect(inside.filter((k) => !filter.has(k))).toEqual([]);
			// Upper case (checksummed) keys are the same keys.
			expect(filter.has((inside[0] as string).toUpperCase().replace("0X", "0x"))).toBe(true);
			const outside = Array.from({ length: 20_000 }, (_, i) => make(1_000_000 + i));
			const rate = outside.filter((k) => filter.has(k)).length / outside.length;
			expect(rate).toBeLessThan(0.02);
			expect(filter.bytes).toBeLessThanOrEqual(Math.ceil((inside.length * 10) / 8) + 1);
		});
	}

	it("round-trips through its file, and a damaged file is an error naming it", async () => {
		const keys = Array.from({ length: 500 }, (_, i) => address(i));
		const { data } = await buildKeyFilter(batches(keys), keys.length);
		const path = join(dir, "run.parquet.filter");
		await saveKeyFilter(path, data);
		const loaded = await loadKeyFilter(path);
		expect(keys.every((k) => loaded.has(k))).toBe(true);
		expect(loaded.has(address(99_999))).toBe(false);
		await writeFile(path, data.subarray(0, data.length - 3));
		await expect(loadKeyFilter(path)).rejects.toThrow(/run\.parquet\.filter is not a chainlake key filter/);
	});

	it("keeps its file's busy keys after its bits; without them it reads as before, and a cut list is an error", async () => {
		const keys = Array.from({ length: 500 }, (_, i) => address(i));
		const { data } = await buildKeyFilter(batches(keys), keys.length);
		const path = join(dir, "busy.parquet.filter");
		const busy = [address(3), address(7)].sort();
		await saveKeyFilter(path, withBusyKeys(data, busy));
		const loaded = await loadKeyFilter(path);
		expect(keys.every((k) => loaded.has(k))).toBe(true);
		expect([...(loaded.busy ?? [])].sort()).toEqual(busy);
		// An empty list says no key is busy; no list says nothing.
		await saveKeyFilter(path, withBusyKeys(data, []));
		expect((await loadKeyFilter(path)).busy?.size).toBe(0);
		await saveKeyFilter(path, data);
		expect((await loadKeyFilter(path)).busy).toBeUndefined();
		const cut = withBusyKeys(data, busy);
		await writeFile(path, cut.subarray(0, cut.length - 5));
		await expect(loadKeyFilter(path)).rejects.toThrow(/busy\.parquet\.filter is not a chainlake key filter/);
		await writeFile(path, cut.subarray(0, data.length + 6));
		await expect(loadKeyFilter(path)).rejects.toThrow(/not a chainlake key filter/);
	});

	it("keeps each busy key's rows and marks where given; a list without them reads with none, a cut one is an error", async () => {
		const keys = Array.from({ length: 500 }, (_, i) => address(i));
		const { data } = await buildKeyFilter(batches(keys), keys.length);
		const path = join(dir, "counted.parquet.filter");
		const busy = [address(3), address(7), address(11)].sort();
		const rows = [
			{ rows: 2_049, marks: Float64Array.from([10, 12, 15, 19, 30, 31, 40, 41, 50]) },
			{ rows: 331_191, marks: Float64Array.from({ length: 1_295 }, (_, i) => 90_000 + i * 7) },
			{ rows: 257, marks: Float64Array.from([5, 2 ** 40]) },
		];
		await saveKeyFilter(path, withBusyKeys(data, busy, rows));
		const loaded = await loadKeyFilter(path);
		expect(keys.every((k) => loaded.has(k))).toBe(true);
		expect([...(loaded.busy ?? [])].sort()).toEqual(busy);
		expect(busy.map((k) => loaded.busyRows?.get(k))).toEqual(rows);
		expect(loaded.busyRows?.get(address(4))).toBeUndefined();
		await saveKeyFilter(path, withBusyKeys(data, busy));
		expect((await loadKeyFilter(path)).busyRows).toBeUndefined();
		await saveKeyFilter(path, withBusyKeys(data, [], []));
		expect((await loadKeyFilter(path)).busyRows?.size).toBe(0);
		const counted = withBusyKeys(data, busy, rows);
		for (const cut of [4, 8 * 1_295, counted.length - data.length - 13]) {
			await writeFile(path, counted.subarray(0, counted.length - cut));
			await expect(loadKeyFilter(path)).rejects.toThrow(/counted\.parquet\.filter is not a chainlake key filter/);
		}
	});
});
