import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FollowEvent } from "../../src/follow/follow-context.js";
import { createFollower } from "../../src/follow/follower.js";
import { createRpcClient } from "../../src/rpc/client.js";
import { partitionPath } from "../../src/store/format/layout.js";
import { loadManifest, missingRanges } from "../../src/store/format/manifest.js";
import type { ChunkEntry } from "../../src/store/format/records.js";
import { parseChainId } from "../../src/util/chain.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { nodeCall } from "../helpers/node-rpc.js";

/**
 * The follower's merge windows (compact()): final head chunks are merged in aligned windows of
 * 4, 16, ... blocks, also when a follower that fell behind appended several final blocks as one
 * chunk among the one-block ones (the case that left the demo's head files unmerged for good).
 */
const CHAIN = 31337;
const CHAIN_ID = `eip155-${CHAIN}`;
const FINALITY = 2;
const PARTITION = 64;
let anvil: AnvilInstance;
let root: string;
let follower: ReturnType<typeof createFollower>;
let db: DuckDBInstance;

const mine = (n: number) => nodeCall(anvil.url, "anvil_mine", [`0x${n.toString(16)}`]);
const head = async () => Number(await nodeCall(anvil.url, "eth_blockNumber"));
/** Steps until a step merges nothing (one merge a step); returns the merges seen. */
async function settle(): Promise<FollowEvent[]> {
	const seen: FollowEvent[] = [];
	for (let i = 0; i < 50; i++) {
		const merged = (await follower.step()).filter((e) => e.type === "compact");
		if (merged.length === 0) return seen;
		seen.push(...merged);
	}
	throw new Error("still merging after 50 steps");
}

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	root = await mkdtemp(join(tmpdir(), "chainlake-compact-windows-"));
	const logger = createMemoryLogger();
	follower = createFollower({
		rpc: createRpcClient({ urls: [anvil.url], logger }),
		chain: parseChainId(CHAIN_ID),
		dataDir: root,
		logger,
		traces: "parity",
		finalityDepth: FINALITY,
		partitionSize: PARTITION,
		compactFanIn: 4,
		deleteGraceMs: 0,
	});
	db = await DuckDBInstance.create(":memory:");
});

afterAll(async () => {
	await follower?.stop();
	db?.closeSync();
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("merge windows of the follower's head files", () => {
	it("merges aligned windows around a chunk of several blocks, keeps every block once, and leaves no window to merge", async () => {
		// One block a step, then a jump of 9 blocks (more than the finality depth: blocks
		// 7..13 come as one final chunk across the windows 4..7 and 8..11), then one a step again.
		for (let i = 0; i < 6; i++) {
			await mine(1);
			await follower.step();
		}
		await mine(9);
		await follower.step();
		let m = await loadManifest(root, CHAIN_ID, CHAIN);
		expect(m.chunks.some((c) => c.from < c.to && c.from % 4 !== 0)).toBe(true);
		const merges: FollowEvent[] = [];
		for (let i = 0; i < 30; i++) {
			await mine(1);
			merges.push(...(await follower.step()).filter((e) => e.type === "compact"), ...(await settle()));
		}
		const top = await head();
		m = await loadManifest(root, CHAIN_ID, CHAIN);
		const chunks = [...m.chunks].sort((a, b) => a.from - b.from);
		const lastFinal = top - FINALITY;

		// Every block 0..head is listed once.
		expect(missingRanges(m, 0, top)).toEqual([]);
		expect(chunks[0]?.from).toBe(0);
		expect(chunks.at(-1)?.to).toBe(top);
		for (let i = 1; i < chunks.length; i++) expect(chunks[i]?.from).toBe((chunks[i - 1] as ChunkEntry).to + 1);
		const conn = await db.connect();
		const files = chunks.map((c) => `'${partitionPath(root, CHAIN_ID, "blocks", c)}'`).join(",");
		const rows = (
			await conn.runAndReadAll(`SELECT count(*)::INT n, count(DISTINCT number)::INT d FROM read_parquet([${files}])`)
		).getRowObjects()[0];
		expect(rows).toEqual({ n: top + 1, d: top + 1 });

		// The windows merged: the 16-block windows below the final mark are one chunk each...
		expect(merges.some((e) => e.type === "compact" && e.to - e.from + 1 === 16)).toBe(true);
		for (let a = 0; a + 15 <= lastFinal; a += 16) {
			expect(
				chunks.filter((c) => c.from >= a && c.to <= a + 15).map((c) => [c.from, c.to]),
				`window ${a}`,
			).toEqual([[a, a + 15]]);
		}
		// ...and no final window of 4 or 16 blocks is still held by several chunks with none across its edges.
		for (const size of [4, 16]) {
			for (let a = 0; a + size - 1 <= lastFinal; a += size) {
				const b = a + size - 1;
				const across = chunks.some((c) => (c.from < a && c.to >= a) || (c.from <= b && c.to > b));
				const inside = chunks.filter((c) => c.from >= a && c.to <= b);
				expect(across || inside.length <= 1, `window ${a}..${b}`).toBe(true);
			}
		}
		// The final part is a handful of chunks; the last FINALITY blocks are one-block chunks.
		expect(chunks.filter((c) => c.to <= lastFinal).length).toBeLessThanOrEqual(6);
		expect(chunks.filter((c) => c.from > lastFinal).every((c) => c.from === c.to)).toBe(true);
		conn.closeSync();
	}, 120_000);
});
