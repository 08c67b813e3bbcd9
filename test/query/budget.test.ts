/**
 * The query budget of createStore: a query running past it is interrupted in about the budget's
 * time, fails with QueryTimeoutError, and its connection goes back to the pool; a snapshot's
 * queries share one budget; the API answers 503 QUERY_TIMEOUT with a message saying what to do.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { QueryTimeoutError } from "../../src/query/query-timeout-error.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { DEFAULT_QUERY_TIMEOUT_MS } from "../../src/query/store/store-options.js";
import { UnavailableError } from "../../src/query/unavailable-error.js";

const CHAIN = "eip155-1";
const BUDGET_MS = 300;
/** 10^15 row pairs: hours of work, so only the budget can end it. */
const SLOW = "SELECT count(*) AS n FROM range(1000000000) a, range(1000000) b WHERE a.range + b.range = -1";

let dir: string;
let store: Store;

beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "chainlake-budget-"));
	// A served chain with no files yet: enough for queries that read no dataset.
	await mkdir(join(dir, CHAIN));
	store = await createStore(dir, { queryTimeoutMs: BUDGET_MS });
});
afterAll(async () => {
	store?.close();
	await rm(dir, { recursive: true, force: true });
});

async function timed<T>(p: Promise<T>): Promise<{ ms: number; error: unknown; value?: T }> {
	const t0 = performance.now();
	try {
		const value = await p;
		return { ms: performance.now() - t0, error: undefined, value };
	} catch (error) {
		return { ms: performance.now() - t0, error };
	}
}

describe("query budget", () => {
	it("interrupts a slow query in about the budget's time, then the store answers the next query", async () => {
		const r = await timed(store.query(CHAIN, SLOW));
		expect(r.error).toBeInstanceOf(QueryTimeoutError);
		expect((r.error as QueryTimeoutError).code).toBe("QUERY_TIMEOUT");
		expect((r.error as QueryTimeoutError).budgetMs).toBe(BUDGET_MS);
		expect(r.ms).toBeGreaterThanOrEqual(BUDGET_MS - 20);
		expect(r.ms).toBeLessThan(BUDGET_MS + 1500);
		expect(await store.query(CHAIN, "SELECT 42 AS x")).toEqual([{ x: 42 }]);
	});

	it("gives every connection back: more interrupted queries than the pool holds, then fast ones", async () => {
		// 10 slow queries on a pool of 4: if an interrupted query kept its connection, the later
		// ones (and the fast ones after) would wait forever.
		const t0 = performance.now();
		const slow = await Promise.all(Array.from({ length: 10 }, () => timed(store.query(CHAIN, SLOW))));
		for (const r of slow) expect(r.error).toBeInstanceOf(QueryTimeoutError);
		// Three waves of at most 4, each cut after the budget.
		expect(performance.now() - t0).toBeLessThan(3 * BUDGET_MS + 3000);
		const fast = await Promise.all(Array.from({ length: 8 }, (_, i) => store.query(CHAIN, `SELECT ${i} AS i`)));
		expect(fast.map((rows) => rows[0]?.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
	});

	it("a prepared statement that was interrupted runs again (and is cut again)", async () => {
		const r = await timed(store.query(CHAIN, SLOW));
		expect(r.error).toBeInstanceOf(QueryTimeoutError);
		expect(r.ms).toBeLessThan(BUDGET_MS + 1500);
	});

	it("a snapshot's queries share one budget: once spent, its next query fails at once", async () => {
		const snap = store.snapshot(CHAIN);
		expect((await timed(snap.query(SLOW))).error).toBeInstanceOf(QueryTimeoutError);
		const next = await timed(snap.query("SELECT 1 AS one"));
		expect(next.error).toBeInstanceOf(QueryTimeoutError);
		expect(next.ms).toBeLessThan(50);
		// A new snapshot (the next request) has the whole budget again.
		expect(await store.snapshot(CHAIN).query("SELECT 1 AS one")).toEqual([{ one: 1 }]);
	});

	it("a request that waited past the snapshot's age for a connection is refused as busy (its files may be gone)", async () => {
		const young = await createStore(dir, { queryTimeoutMs: BUDGET_MS, snapshotMaxAgeMs: 200 });
		try {
			const snap = young.snapshot(CHAIN);
			expect(await snap.query("SELECT 1 AS one")).toEqual([{ one: 1 }]);
			await new Promise((r) => setTimeout(r, 250));
			const late = await timed(snap.query("SELECT 1 AS one"));
			expect(late.error).toBeInstanceOf(UnavailableError);
			expect((late.error as UnavailableError).code).toBe("BUSY");
			// The connection went back: the next request runs.
			for (let i = 0; i < 6; i++) expect(await young.snapshot(CHAIN).query("SELECT 1 AS one")).toEqual([{ one: 1 }]);
		} finally {
			young.close();
		}
	});

	it("fast queries within the budget are untouched, and other errors stay what they are", async () => {
		const snap = store.snapshot(CHAIN);
		for (let i = 0; i < 20; i++) expect(await snap.query("SELECT $i::INT AS i", { i })).toEqual([{ i }]);
		const bad = await timed(store.query(CHAIN, "SELECT * FROM no_such_table"));
		expect(bad.error).toBeInstanceOf(Error);
		expect(bad.error).not.toBeInstanceOf(QueryTimeoutError);
	});

	it("the default budget is 10 s and a budget setTimeout cannot time is refused", async () => {
		expect(DEFAULT_QUERY_TIMEOUT_MS).toBe(10_000);
		for (const queryTimeoutMs of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
			await expect(createStore(dir, { queryTimeoutMs }), String(queryTimeoutMs)).rejects.toThrow(/queryTimeoutMs/);
		}
	});
});

describe("through the API", () => {
	it("a request whose query runs past the budget answers 503 QUERY_TIMEOUT saying how to ask for less", async () => {
		// The real store and its real interrupt, with every query of the request swapped for a slow
		// one (and the empty chain made to look stored, so the route gets as far as a query).
		const slowStore: Store = {
			...store,
			snapshot(chain) {
				const snap = store.snapshot(chain);
				return { ...snap, head: () => 1, hasDataset: () => true, query: () => snap.query(SLOW) };
			},
		};
		const app = await buildApp({
			store: slowStore,
			keyring: createKeyring({ path: join(dir, "_keys.json"), envKeys: ["budget-key"] }),
			dataDir: dir,
		});
		try {
			const t0 = performance.now();
			const res = await app.inject({
				url: `/${CHAIN}/v1/blocks/latest`,
				headers: { authorization: "Bearer budget-key" },
			});
			expect(performance.now() - t0).toBeLessThan(BUDGET_MS + 1500);
			expect(res.statusCode).toBe(503);
			const body = res.json();
			expect(Object.keys(body).sort()).toEqual(["code", "error", "message", "statusCode"]);
			expect(body).toMatchObject({ statusCode: 503, error: "Service Unavailable", code: "QUERY_TIMEOUT" });
			expect(body.message).toContain(`${BUDGET_MS} ms`);
			expect(body.message).toMatch(/narrow the block range/);
			expect(body.message).toMatch(/lower limit/);
			expect(res.body).not.toMatch(/range\(|SELECT|INTERRUPT|duckdb/i);
			// And the store still answers afterwards.
			expect(await store.query(CHAIN, "SELECT 7 AS x")).toEqual([{ x: 7 }]);
		} finally {
			await app.close();
		}
	});
});
