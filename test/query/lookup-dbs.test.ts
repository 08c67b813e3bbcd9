import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lockDown } from "../../src/query/lock-down.js";
import { lookupDbs } from "../../src/query/store/lookup-dbs.js";
import { createParquetWriter, type ParquetWriter } from "../../src/store/files/parquet-writer.js";
import { partitionPath } from "../../src/store/format/layout.js";
import type { Manifest, RunEntry } from "../../src/store/format/records.js";
import { lookupDbPath } from "../../src/store/indexes/lookup-db.js";

/**
 * The store's lookup databases (query/store/lookup-dbs.ts) on real DuckDB files written by the
 * writer, attached to a locked-down instance as the service's: attached once, read through their
 * relation, a missing one reported unusable, and an unlisted one detached only after its grace.
 */
const CHAIN = "eip155-1";
let root: string;
let writer: ParquetWriter;

const run = (from: number, to: number, gen: number): RunEntry => ({
	index: "block_records",
	from,
	to,
	last_hash: "0x",
	gen,
	chunks: 1,
	rows: 3,
	keys: 3,
	lookup_db: true,
});
const manifestOf = (runs: RunEntry[]): Manifest => ({ version: 1, chain: CHAIN, chain_number: 1, chunks: [], runs });

/** Writes run `r`'s Parquet part of three records, keys `<tag>0..2`, and its lookup database. */
async function writeRun(r: RunEntry, tag: string): Promise<string> {
	const path = partitionPath(root, CHAIN, r.index, r);
	await mkdir(dirname(path), { recursive: true });
	await writer.copy(
		`SELECT '${tag}' || i AS hash, 'record of ${tag}' || i AS record FROM range(3) t(i) ORDER BY hash`,
		path,
		"FORMAT parquet",
	);
	expect(await writer.lookupDb([path], "hash", lookupDbPath(path))).toBe(3);
	return lookupDbPath(path);
}

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), "chainlake-lookup-dbs-"));
	writer = await createParquetWriter();
});
afterAll(async () => {
	writer?.close();
	await rm(root, { recursive: true, force: true });
});

describe("lookup databases", () => {
	it("attaches each once, reads it, reports a missing one unusable, and detaches an unlisted one after its grace", async () => {
		const a = run(0, 9, 1);
		const b = run(10, 19, 2);
		const [dbA, dbB] = [await writeRun(a, "a"), await writeRun(b, "b")];
		const instance = await DuckDBInstance.create(":memory:");
		await lockDown(instance, root);
		const conn = await instance.connect();
		const attached = async () =>
			(await conn.runAndReadAll("SELECT path FROM duckdb_databases() WHERE NOT internal AND path IS NOT NULL"))
				.getRows()
				.map((r) => r[0]);
		try {
			const dbs = lookupDbs(root);
			expect(await dbs.attach(conn, [dbA, dbB])).toBe(true);
			expect(await dbs.attach(conn, [dbA])).toBe(true); // once: a second attach would fail on its alias
			const read = await conn.runAndReadAll(`SELECT record FROM ${dbs.relation(dbB)} WHERE hash = $h`, { h: "b1" });
			expect(read.getRows()).toEqual([["record of b1"]]);
			expect((await attached()).sort()).toEqual([dbA, dbB].sort());
			// Read-only: the service can never change one.
			await expect(conn.run(`DELETE FROM ${dbs.relation(dbA)}`)).rejects.toThrow(/read-only/);

			// Listed but missing: not usable, so the expander leaves it for the run's Parquet parts.
			const gone = lookupDbPath(partitionPath(root, CHAIN, "block_records", run(20, 29, 3)));
			expect(dbs.usable(gone)).toBe(true);
			expect(await dbs.attach(conn, [gone])).toBe(false);
			expect(dbs.usable(gone)).toBe(false);

			// b unlisted (a merge replaced it): kept through the grace, then detached.
			await dbs.sweep(conn, manifestOf([a, b]), 200);
			await dbs.sweep(conn, manifestOf([a]), 200);
			expect((await attached()).sort()).toEqual([dbA, dbB].sort());
			await new Promise((r) => setTimeout(r, 250));
			await dbs.sweep(conn, manifestOf([a]), 200);
			expect(await attached()).toEqual([dbA]);
			// Once per manifest state: the same state again does nothing, and another chain's state
			// never detaches this one's.
			await dbs.sweep(conn, { ...manifestOf([]), chain: "eip155-5" }, 0);
			expect(await attached()).toEqual([dbA]);
			// Asked again (an old snapshot's request after all), it is attached anew under a new alias.
			const again = dbs.relation(dbB);
			expect(await dbs.attach(conn, [dbB])).toBe(true);
			const reread = await conn.runAndReadAll(`SELECT count(*)::INT FROM ${again}`);
			expect(reread.getRows()).toEqual([[3]]);
		} finally {
			conn.closeSync();
			instance.closeSync();
		}
	});
});
