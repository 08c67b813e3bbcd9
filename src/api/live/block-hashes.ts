import type { Snapshot } from "../../query/store/store.js";

/*
 * Block hashes as a snapshot stores them, for a feed's reorg checks: a chunk's last block from the
 * manifest (no file read), the blocks near the head from one query shared by every feed of that
 * manifest (Snapshot.memo), others one query each, memoised too.
 */

/** The parent of block 0, as a feed's reorg event names it when every item goes. */
export const ZERO_HASH = `0x${"0".repeat(64)}`;
/** Blocks below the head whose hashes one shared query reads. */
const NEAR_HEAD = 128;

const hashesOf = (snap: Snapshot, from: number, to: number) =>
	snap.memo(`live-hashes:${from}-${to}`, async () => {
		const rows = await snap.query(
			"SELECT number, hash FROM {blocks} WHERE number BETWEEN $from AND $to",
			{ from, to },
			[from, to],
		);
		return new Map(rows.map((r) => [Number(r.number), String(r.hash)]));
	});

/** The hash of block `n` in `snap`, or null where it has no such block (ZERO_HASH for -1). */
export async function hashAt(snap: Snapshot, n: number): Promise<string | null> {
	if (n < 0) return ZERO_HASH;
	const head = snap.head();
	if (head === null || n > head) return null;
	const chunk = snap.manifest()?.chunks.find((c) => c.to === n);
	if (chunk?.last_hash) return chunk.last_hash;
	if (n > head - NEAR_HEAD) return (await hashesOf(snap, Math.max(0, head - NEAR_HEAD + 1), head)).get(n) ?? null;
	return (await hashesOf(snap, n, n)).get(n) ?? null;
}

/** Whether two hashes are the same block's; a cursor keeps a hash's first 16 hex digits. */
export const sameHash = (a: string | null, b: string | null) =>
	a !== null && b !== null && a.slice(0, 18) === b.slice(0, 18);
