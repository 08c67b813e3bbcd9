import { ChainBreakError, type FetchedRange, type Link } from "../backfill/fetch-range.js";
import { dropReturnedGhosts, replaceChunks, writeChunkFiles } from "../store/chunks/chunk-store.js";
import { alignedChunks } from "../store/format/layout.js";
import { nextGeneration } from "../store/format/manifest.js";
import type { ChunkEntry } from "../store/format/records.js";
import { crashPoint } from "../util/crash-point.js";
import { type FollowContext, type FollowEvent, type FollowState, markFinal } from "./follow-context.js";
import { sliceRows } from "./slice-rows.js";

/*
 * A follower step's append: new blocks (or a damaged chunk's again), checked to chain onto what
 * is stored, written as final partitions and one-block head chunks, and committed in one
 * manifest save.
 */

/**
 * Fetches [from, to] and commits it: final blocks in aligned chunks, the rest one block per
 * chunk; `replacing`: a damaged chunk of exactly that range, swapped out in the same save.
 */
export async function appendBlocks(
	ctx: FollowContext,
	s: FollowState,
	from: number,
	to: number,
	head: number,
	replacing?: ChunkEntry,
): Promise<FollowEvent | null> {
	const { fetcher, logger, finality, partitionSize, dataDir, chain, retire, stats } = ctx;
	// The node moved under us mid-fetch: the next step's reorg check sorts it out.
	const moved = () => {
		logger.warn(`blocks ${from}..${to} do not chain onto the stored data; retrying next step`);
		return null;
	};
	let fetched: FetchedRange;
	try {
		fetched = await fetcher.fetchRange(from, to, s.traces);
	} catch (err) {
		if (err instanceof ChainBreakError) return moved();
		throw err;
	}
	const { links, rows } = fetched;
	const before = s.manifest.chunks.find((c) => c.to === from - 1);
	if (before && links[0]?.parentHash !== before.last_hash) return moved();
	const after = replacing && s.manifest.chunks.find((c) => c.from === to + 1);
	if (after && links.at(-1)?.hash !== after.first_parent_hash) return moved();
	crashPoint("follow.append.fetched");
	const lastFinal = head - finality;
	const ranges = [
		...(from <= lastFinal ? alignedChunks(from, Math.min(to, lastFinal), partitionSize) : []),
		...Array.from({ length: Math.max(0, to - Math.max(from, lastFinal + 1) + 1) }, (_, i) => {
			const n = Math.max(from, lastFinal + 1) + i;
			return [n, n] as [number, number];
		}),
	];
	const entries: ChunkEntry[] = [];
	for (const [a, b] of ranges) {
		const first = links[a - from] as Link;
		const last = links[b - from] as Link;
		entries.push(
			await writeChunkFiles(
				s.writer,
				dataDir,
				chain.id,
				{
					from: a,
					to: b,
					traces: s.traces,
					firstParentHash: first.parentHash,
					lastHash: last.hash,
					gen: nextGeneration(s.manifest),
				},
				sliceRows(rows, a, b),
			),
		);
		crashPoint("follow.append.chunk-written");
	}
	markFinal(s.manifest, Math.min(to, lastFinal));
	// Blocks a reorg dropped and the chain took back leave the ghosts in the same save.
	const returned = await dropReturnedGhosts(s.writer, dataDir, s.manifest, new Set(links.map((l) => l.hash)));
	const replaced = await replaceChunks(dataDir, s.manifest, replacing ? [replacing] : [], entries);
	crashPoint("follow.append.committed");
	retire([...returned, ...replaced]);
	stats.blocksIngested += to - from + 1;
	return { type: "blocks", from, to };
}
