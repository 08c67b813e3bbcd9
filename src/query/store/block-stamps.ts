import type { ChunkEntry, Manifest } from "../../store/format/records.js";
import type { BlockStamp, Params, Row } from "./store.js";

/** Blocks read and kept together: a small read even in a merged chunk of millions of blocks. */
export const STAMP_SLICE_BLOCKS = 4_096;
/** About 160 MB of stamps (41 bytes a block): all of L's million blocks, or 4 million of a larger chain's most asked. */
export const MAX_STAMPED_BLOCKS = 4_000_000;

interface Stamps {
	from: number;
	/** 32 bytes a block, from `from` on. */
	hashes: Buffer;
	timestamps: BigInt64Array;
	/** 1 where the blocks file has the block. */
	have: Uint8Array;
}

/** Runs a statement over a snapshot's files of the blocks in `window` (the store's runner, bound to the snapshot). */
type Read = (sql: string, params: Params, window: readonly [number, number]) => Promise<Row[]>;

/**
 * A block's hash and timestamp by number, for the rows that leave them out (the wallet records:
 * store/format/address-records.ts BLOCK_STAMP_FIELDS). DuckDB reads them from a chunk's blocks
 * files a slice of STAMP_SLICE_BLOCKS aligned blocks at a time (the files are sorted by number, so
 * a slice reads the row group or two holding it); they are kept as 41 bytes a block, at most about
 * MAX_STAMPED_BLOCKS blocks, the least recently used slices dropped first. A slice is kept under
 * what names its chunk's files (its range, generation and last hash): a reorged or extended chunk
 * is read afresh, never mixed with what was kept of it before, and a snapshot only ever looks up
 * its own chunks.
 */
export function blockStamps(maxBlocks = MAX_STAMPED_BLOCKS) {
	const kept = new Map<string, { blocks: number; stamps: Promise<Stamps> }>();
	let held = 0;

	const load = async (from: number, to: number, read: Read): Promise<Stamps> => {
		const n = to - from + 1;
		const stamps: Stamps = {
			from,
			hashes: Buffer.alloc(32 * n),
			timestamps: new BigInt64Array(n),
			have: new Uint8Array(n),
		};
		const rows = await read(
			"SELECT number, hash, timestamp FROM {blocks} WHERE number BETWEEN $from AND $to",
			{ from, to },
			[from, to],
		);
		for (const r of rows) {
			const i = Number(r.number) - from;
			stamps.hashes.write(String(r.hash).slice(2), 32 * i, 32, "hex");
			stamps.timestamps[i] = BigInt(r.timestamp as bigint);
			stamps.have[i] = 1;
		}
		return stamps;
	};

	/** The stamps of chunk `c`'s slice `s` (blocks s × STAMP_SLICE_BLOCKS onwards, within the chunk). */
	const sliceStamps = (chain: string, c: ChunkEntry, s: number, read: Read): Promise<Stamps> => {
		const key = `${chain}/${c.from}-${c.to}/${c.gen ?? 0}/${c.last_hash}/${s}`;
		const hit = kept.get(key);
		if (hit) {
			// Most recently used last.
			kept.delete(key);
			kept.set(key, hit);
			return hit.stamps;
		}
		const from = Math.max(c.from, s * STAMP_SLICE_BLOCKS);
		const to = Math.min(c.to, (s + 1) * STAMP_SLICE_BLOCKS - 1);
		const entry = { blocks: to - from + 1, stamps: load(from, to, read) };
		kept.set(key, entry);
		held += entry.blocks;
		entry.stamps.catch(() => {
			if (kept.get(key) === entry) {
				kept.delete(key);
				held -= entry.blocks;
			}
		});
		for (const [k, old] of kept) {
			if (held <= maxBlocks || k === key) break;
			kept.delete(k);
			held -= old.blocks;
		}
		return entry.stamps;
	};

	/** The stamps of `numbers` as of `manifest` (a snapshot's); a block it does not hold is left out. */
	return async (
		chain: string,
		manifest: Manifest | null,
		numbers: Iterable<number>,
		read: Read,
	): Promise<Map<number, BlockStamp>> => {
		const out = new Map<number, BlockStamp>();
		const chunks = manifest?.chunks ?? [];
		const wanted = new Map<string, { chunk: ChunkEntry; slice: number; blocks: number[] }>();
		for (const n of new Set(numbers)) {
			const chunk = chunks.find((x) => x.from <= n && n <= x.to && x.datasets.includes("blocks"));
			if (!chunk) continue;
			const slice = Math.floor(n / STAMP_SLICE_BLOCKS);
			const at = `${chunk.from}/${slice}`;
			const w = wanted.get(at) ?? { chunk, slice, blocks: [] };
			w.blocks.push(n);
			wanted.set(at, w);
		}
		await Promise.all(
			[...wanted.values()].map(async ({ chunk, slice, blocks }) => {
				const s = await sliceStamps(chain, chunk, slice, read);
				for (const n of blocks) {
					const i = n - s.from;
					if (!s.have[i]) continue;
					out.set(n, {
						hash: `0x${s.hashes.toString("hex", 32 * i, 32 * i + 32)}`,
						timestamp: s.timestamps[i] as bigint,
					});
				}
			}),
		);
		return out;
	};
}
