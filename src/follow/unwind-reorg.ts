import { compareBlockHash, ethGetBlockHash } from "../rpc/actions.js";
import { hashNotIn, replaceChunks } from "../store/chunks/chunk-store.js";
import { partitionPath } from "../store/format/layout.js";
import { GHOST_DATASET, nextGeneration } from "../store/format/manifest.js";
import type { ChunkEntry, GhostEntry } from "../store/format/records.js";
import { crashPoint } from "../util/crash-point.js";
import { type FollowContext, type FollowEvent, type FollowState, sortedChunks } from "./follow-context.js";

/*
 * A follower step's reorg: the stored ranges the node no longer has are swapped out in one
 * manifest save, their blocks kept as ghosts; a reorg reaching blocks stored as final is a node
 * fault, refused.
 */

/**
 * Walks back from the stored tip to the newest stored range whose last block the node still
 * has, then swaps every range above it out (their blocks kept as ghosts). The canonical
 * blocks are appended by the same step.
 */
export async function unwindReorg(ctx: FollowContext, s: FollowState, head: number): Promise<FollowEvent> {
	const { rpc, chain, dataDir, logger, finality, stats, retire } = ctx;
	const orphaned: ChunkEntry[] = [];
	for (const c of sortedChunks(s.manifest).reverse()) {
		if ((await compareBlockHash(rpc, c.to, c.last_hash)) !== "different") break;
		orphaned.push(c);
	}
	const lowest = orphaned.at(-1)?.from ?? 0;
	// Measured against what was final when stored, not against today's head: after a crash or
	// any downtime the node has moved on, and blocks stored as non-final (then reorged out)
	// may now lie deeper than the finality depth; refusing them would stall the follower for good.
	const finalThrough = s.manifest.final_through ?? head - finality;
	if (orphaned.length === s.manifest.chunks.length || lowest <= finalThrough) {
		stats.faults++;
		const message = `node fault on ${chain.id}: its chain differs from the stored one at or below block ${lowest}, which was stored as final (through block ${finalThrough}, finality depth ${finality}, head ${head}); not applied, retrying`;
		logger.error(message);
		stats.lastFault = { at: Date.now(), message };
		return { type: "fault", message };
	}
	crashPoint("follow.reorg.detected");
	// Keep the blocks that left the canonical chain, so their hashes still answer (ghost: true).
	const canonical = new Set<string>();
	for (let n = lowest; n <= (orphaned[0]?.to ?? lowest); n++) {
		const h = await ethGetBlockHash(rpc, n);
		if (h) canonical.add(h);
	}
	const blockFiles = orphaned.map((c) => partitionPath(dataDir, chain.id, "blocks", c));
	const ghost: GhostEntry = {
		from: lowest,
		to: orphaned[0]?.to ?? lowest,
		last_hash: orphaned[0]?.last_hash ?? "0x",
		gen: nextGeneration(s.manifest),
	};
	const ghostPath = partitionPath(dataDir, chain.id, GHOST_DATASET, ghost);
	await s.writer.merge("blocks", blockFiles, ghostPath, hashNotIn(canonical));
	ghost.hashes = await s.writer.blockHashes([ghostPath]);
	crashPoint("follow.reorg.ghosts-written");
	s.manifest.ghosts = [...(s.manifest.ghosts ?? []), ghost];
	const replaced = await replaceChunks(dataDir, s.manifest, orphaned, []);
	crashPoint("follow.reorg.committed");
	retire(replaced);
	stats.reorgs++;
	const ancestor = lowest - 1;
	logger.warn(`reorg on ${chain.id}: blocks ${lowest}..${ghost.to} replaced (common ancestor ${ancestor})`);
	return { type: "reorg", ancestor, orphaned: orphaned.map((c) => c.last_hash) };
}
