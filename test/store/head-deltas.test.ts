import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headStep, mergeDue } from "../../src/store/chunks/merges.js";
import { createParquetWriter, type ParquetWriter } from "../../src/store/files/parquet-writer.js";
import { DEFERRED } from "../../src/store/format/indexes.js";
import { partitionPath } from "../../src/store/format/layout.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import type { ChunkEntry, Manifest } from "../../src/store/format/records.js";
import { filterPath } from "../../src/store/indexes/key-filter.js";
import { unsettledChunks } from "../../src/store/indexes/runs.js";
import { writeSynthChain } from "../../src/synth/synth.js";
import { parseChainId } from "../../src/util/chain.js";
import { copyWithoutHeadDeltas } from "../helpers/anvil-chain.js";

/**
 * The balance delta files of chunks not yet settled (src/store/merges.ts headStep), on a small
 * synthetic chain whose last chunk is not settled: derived once nothing else is due, the same
 * files a writer's own merges make; and when the chunk leaves the manifest while they are
 * written (a reorg, a compaction), never listed, and handed back to be retired.
 */
const CHAIN = parseChainId("eip155-1");
let root: string;
let writer: ParquetWriter;

const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
const load = () => loadManifest(join(root, "copy"), CHAIN.id, CHAIN.number);
/** The chunk not settled, and the paths of its balance delta files with their key filters. */
function head(m: Manifest) {
	const chunk = unsettledChunks(m)[0] as ChunkEntry;
	const files = (dir: string) =>
		DEFERRED.flatMap((i) => {
			const path = partitionPath(dir, CHAIN.id, i, chunk);
			return [path, filterPath(path)];
		});
	return { chunk, files };
}

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), "chainlake-head-deltas-"));
	const scale = { blocks: 300, accounts: 500, contracts: 20, factories: 2, partitionSize: 100 };
	await writeSynthChain({ scale, chain: CHAIN, dataDir: join(root, "written"), partitionSize: 100 });
	writer = await createParquetWriter();
}, 120_000);

afterAll(async () => {
	writer?.close();
	if (root) await rm(root, { recursive: true, force: true });
});

describe("balance deltas of chunks not yet settled", () => {
	it("are derived once nothing else is due, the same files as the writer's own", async () => {
		const written = await loadManifest(join(root, "written"), CHAIN.id, CHAIN.number);
		// [200, 299] is within 64 blocks of the tip: not settled, yet it has them (synth's merges ran headStep).
		const { chunk, files } = head(written);
		expect([chunk.from, chunk.to]).toEqual([200, 299]);
		expect(chunk.indexes).toEqual(expect.arrayContaining(DEFERRED));
		const want = files(join(root, "written")).map(sha);

		expect(await copyWithoutHeadDeltas(join(root, "written"), join(root, "copy"), CHAIN.number)).toBe(1);
		const m = await load();
		expect(head(m).chunk.indexes ?? []).not.toContain("erc20_balances");
		expect(mergeDue(join(root, "copy"), m)).toBe(true);
		expect(await headStep(writer, join(root, "copy"), m)).toEqual([]);
		// Listed, saved, and byte for byte what the writer made.
		const saved = await load();
		expect(head(saved).chunk.indexes).toEqual(expect.arrayContaining(DEFERRED));
		expect(head(saved).files(join(root, "copy")).map(sha)).toEqual(want);
		expect(await headStep(writer, join(root, "copy"), saved)).toBeNull();
		expect(mergeDue(join(root, "copy"), saved)).toBe(false);
	});

	it("whose chunk a reorg or a compaction unlisted meanwhile are not listed, and are handed back to retire", async () => {
		await rm(join(root, "copy"), { recursive: true, force: true });
		await copyWithoutHeadDeltas(join(root, "written"), join(root, "copy"), CHAIN.number);
		const m = await load();
		const { chunk, files } = head(m);
		// The commit finds the chunk gone, as after a reorg's save while the files were written.
		const gone = await headStep(writer, join(root, "copy"), m, async (commit) => {
			m.chunks = m.chunks.filter((c) => c !== chunk);
			return commit();
		});
		const paths = files(join(root, "copy"));
		expect((gone ?? []).sort()).toEqual([...paths].sort());
		for (const p of paths) expect(existsSync(p), p).toBe(true);
		expect(chunk.indexes ?? []).not.toContain("erc20_balances");
		// Nothing saved: the manifest on disk still lists the chunk, without them.
		const saved = await load();
		expect(head(saved).chunk.indexes ?? []).not.toContain("erc20_balances");
	});
});
