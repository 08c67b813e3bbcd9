import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { saveManifest } from "../../src/store/delta/save-manifest.js";
import { loadManifest } from "../../src/store/format/manifest.js";

/**
 * Snapshot.memo keeps an answer while the chain's manifest stays the same (the listed files never
 * change), computes it afresh once the manifest changes, and never keeps a failure. Real store,
 * real manifest file on disk; the answers are plain values, since only the memo is under test.
 */
const CHAIN = "eip155-7";
let dir: string;
let store: Store;

beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "chainlake-memo-"));
	await saveManifest(dir, await loadManifest(dir, CHAIN, 7));
	store = await createStore(dir);
});
afterAll(async () => {
	store?.close();
	await rm(dir, { recursive: true, force: true });
});

describe("Snapshot.memo", () => {
	it("computes once per manifest state, again after the manifest changes", async () => {
		let calls = 0;
		const compute = async () => ++calls;
		expect(await store.snapshot(CHAIN).memo("k", compute)).toBe(1);
		expect(await store.snapshot(CHAIN).memo("k", compute)).toBe(1);
		expect(await store.snapshot(CHAIN).memo("other", compute)).toBe(2);

		const m = await loadManifest(dir, CHAIN, 7);
		m.chunks.push({ from: 0, to: 3, traces: "none", datasets: [], rows: {}, first_parent_hash: "0x", last_hash: "0x" });
		// A different size for sure, so the store's (mtime, size) stamp changes even within one ms.
		await saveManifest(dir, m);
		expect(await store.snapshot(CHAIN).memo("k", compute)).toBe(3);
		expect(await store.snapshot(CHAIN).memo("k", compute)).toBe(3);
	});

	it("does not keep a failure: the next call computes again", async () => {
		const failing = async (): Promise<number> => {
			throw new Error("boom");
		};
		await expect(store.snapshot(CHAIN).memo("fails", failing)).rejects.toThrow("boom");
		expect(await store.snapshot(CHAIN).memo("fails", async () => 42)).toBe(42);
	});
});
