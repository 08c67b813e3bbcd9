import type { ChunkEntry, Manifest } from "../../store/format/records.js";
import type { BlockStamp, Params, Row } from "./store.js";

/** 160 MB of stamps: all of L's million blocks, or 4 million of a larger chain's most asked. */
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
 * store/format/address-records.ts BLOCK_STAMP_FIELDS). DuckDB reads a chunk's blocks once (two
 * columns of its blocks file); they are kept as 40 bytes a block, at most MAX_STAMPED_BLOCKS
 * blocks, the least recently used chunks dropped first. A chunk is kept under what names its
 * files (its range, generation and last hash): a reorged or extended chunk is read afresh, never
 * mixed with what was kept of it before, and a snapshot only ever looks up its own chunks.
 */
export function blockStamps(maxBlocks = MAX_STAMPED_BLOCKS) {
	const kept = new Map<string, Promise<Stamps>>();
	let held = 0;
	const sizeOf = (c: ChunkEntry) => c.to - c.from + 1;

	const load = async (c: ChunkEntry, read: Read): Promise<Stamps> => {
		const n = sizeOf(c);
		const stamps: Stamps = {
			from: c.from,
			hashes: Buffer.alloc(32 * n),
			timestamps: new BigInt64Array(n),
			have: new Uint8Array(n),
		};
		const rows = await read(
			"SELECT number, hash, timestamp FROM {blocks} WHERE number BETWEEN $from AND $to",
			{ from: c.from, to: c.to },
			[c.from, c.to],
		);
		for (const r of rows) {
			const i = Number(r.number) - c.from;
			stamps.hashes.write(String(r.hash).slice(2), 32 * i, 32, "hex");
			stamps.timestamps[i] = BigInt(r.timestamp as bigint);
			stamps.have[i] = 1;
		}
		return stamps;
	};

	const chunkStamps = (chain: string, c: ChunkEntry, read: Read): Promise<Stamps> => {
		const key = `${chain}/${c.from}-${c.to}/${c.gen ?? 0}/${c.last_hash}`;
		let p = kept.get(key);
		if (p) {
			// Most recently used last.
			kept.delete(key);
			kept.set(key, p);
			return p;
		}
		p = load(c, read);
		kept.set(key, p);
		held += sizeOf(c);
		p.catch(() => {
			if (kept.get(key) === p) {
				kept.delete(key);
				held -= sizeOf(c);
			}
		});
		for (const [k, old] of kept) {
			if (held <= maxBlocks || k === key) break;
			kept.delete(k);
			// (Its size, from the key: a chunk's range.)
			const [from, to] = (k.split("/")[1] as string).split("-").map(Number) as [number, number];
			held -= to - from + 1;
			old.catch(() => {});
		}
		return p;
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
		const wanted = new Map<ChunkEntry, number[]>();
		for (const n of new Set(numbers)) {
			const c = chunks.find((x) => x.from <= n && n <= x.to && x.datasets.includes("blocks"));
			if (c) wanted.set(c, [...(wanted.get(c) ?? []), n]);
		}
		await Promise.all(
			[...wanted].map(async ([c, ns]) => {
				const s = await chunkStamps(chain, c, read);
				for (const n of ns) {
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
