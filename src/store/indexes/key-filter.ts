import { readFile } from "node:fs/promises";
import { sqlString } from "../../util/sql-string.js";
import { writeFileDurably } from "../../util/temp-files.js";
import type { ParquetWriter } from "../files/parquet-writer.js";
import { INDEXES, type IndexDef, type IndexName } from "../format/indexes.js";
import { partPaths } from "../format/key-parts.js";

/**
 * A Bloom filter over the keys of one index run (addresses or hashes), kept in a file next to
 * the run (`<run>.parquet.filter`) and in memory by readers, so that a wallet or a hash opens
 * only the runs it can be in. No false negatives; about 1% false positives at BITS_PER_KEY 10.
 *
 * Why not an npm package: the keys are hex of Keccak-256 outputs (hashes, and addresses, which
 * are the low 20 bytes of one), so they are already uniformly spread and the probe positions can
 * be read straight off the key's last 16 hex digits (Kirsch–Mitzenmacher double hashing) with
 * no hash function at all; and the filter must load from a file as one byte array at start, not
 * from the JSON the maintained packages (bloom-filters) export. Keys that are not uniform
 * (precompiles, vanity addresses) only raise the false-positive rate, never hide a key.
 */
export interface KeyFilter {
	/** False only if `key` is certainly not in the run. */
	has(key: string): boolean;
	/**
	 * The keys with more rows in the file than its index's `busyRows` (indexes.ts), lower-case;
	 * undefined where the filter does not say (filters written before the list, other kinds): a
	 * key absent from it has its rows in one or two row groups of the file, so a page can read
	 * every file of such a key at once (query/list.ts) instead of window by window.
	 */
	readonly busy?: ReadonlySet<string>;
	/**
	 * Each busy key's rows in the file and where they lie (BusyKey), where the filter records them
	 * (filters written since issue 26's sized windows; older ones list the keys alone): a busy
	 * wallet's page reads a window of about the blocks its page needs (query/list.ts).
	 */
	readonly busyRows?: ReadonlyMap<string, BusyKey>;
	/** Bytes of the bit array (what it costs in memory). */
	readonly bytes: number;
}

/**
 * A busy key's rows in a file: how many, and the block of every MARK_ROWS-th of them in the file's
 * order (by id: its first row's block, the MARK_ROWS-th's, ..., and its last row's), so that the
 * blocks holding any n of its rows from a given block on are known to within MARK_ROWS rows.
 */
export interface BusyKey {
	rows: number;
	marks: Float64Array;
}

/** Rows between a busy key's marks: M's heaviest wallet (331,191 rows in a file) takes 1,295 marks, 10 KiB. */
export const MARK_ROWS = 256;

/** ~0.8% false positives with PROBES 7 (the optimum for 10 bits a key is ln2 × 10 ≈ 7). */
export const BITS_PER_KEY = 10;
const PROBES = 7;
const MAGIC = 0x464c4243; // "CBLF"
const HEADER = 12;
/**
 * After the bit array, optionally: the busy keys (KeyFilter.busy) as BUSY_MAGIC, the key's
 * bytes, their count, then each key's bytes. A filter without it reads as before.
 * MARKED_MAGIC instead: the same header, then for each key its bytes, its rows and its marks'
 * count (uint32 LE each), and its marks (float64 LE): BusyKey.
 */
const BUSY_MAGIC = 0x59535542; // "BUSY"
const MARKED_MAGIC = 0x4d535542; // "BUSM"
const BUSY_HEADER = 12;

function positions(key: string, bits: number, out: Uint32Array): void {
	const n = key.length;
	const h1 = Number.parseInt(key.slice(n - 8), 16) >>> 0;
	const h2 = (Number.parseInt(key.slice(n - 16, n - 8), 16) | 1) >>> 0;
	for (let i = 0; i < PROBES; i++) out[i] = (h1 + (Math.imul(i, h2) >>> 0)) % bits;
}

function over(
	bitset: Uint8Array,
	bits: number,
	busy?: ReadonlySet<string>,
	busyRows?: ReadonlyMap<string, BusyKey>,
): KeyFilter {
	const probe = new Uint32Array(PROBES);
	return {
		busy,
		busyRows,
		bytes: bitset.length,
		has(key) {
			if (key.length < 18) return true;
			positions(key.toLowerCase(), bits, probe);
			for (const p of probe) if (((bitset[p >>> 3] as number) & (1 << (p & 7))) === 0) return false;
			return true;
		},
	};
}

/** Builds a filter sized for `count` keys from `keys` (lower-case hex, `0x`-prefixed). */
export async function buildKeyFilter(
	keys: AsyncIterable<readonly string[]>,
	count: number,
): Promise<{ filter: KeyFilter; data: Uint8Array }> {
	const bits = Math.max(64, Math.ceil(Math.max(1, count) * BITS_PER_KEY));
	const data = new Uint8Array(HEADER + Math.ceil(bits / 8));
	const view = new DataView(data.buffer);
	view.setUint32(0, MAGIC, true);
	view.setUint32(4, bits, true);
	view.setUint32(8, PROBES, true);
	const bitset = data.subarray(HEADER);
	const probe = new Uint32Array(PROBES);
	for await (const batch of keys) {
		for (const key of batch) {
			if (key.length < 18) continue;
			positions(key.toLowerCase(), bits, probe);
			for (const p of probe) bitset[p >>> 3] = (bitset[p >>> 3] as number) | (1 << (p & 7));
		}
	}
	return { filter: over(bitset, bits), data };
}

/** Writes a filter atomically (temporary name, then rename) and durably, as the Parquet files are. */
export async function saveKeyFilter(path: string, data: Uint8Array): Promise<void> {
	await writeFileDurably(path, data);
}

/**
 * `data` (a filter's header and bits) followed by the busy keys' section; with `rows` (each
 * key's rows and marks, in the order of `busy`), the section that records them.
 */
export function withBusyKeys(data: Uint8Array, busy: readonly string[], rows?: readonly BusyKey[]): Uint8Array {
	const width = busy[0] ? (busy[0].length - 2) / 2 : 0;
	const size = rows
		? busy.length * (width + 8) + rows.reduce((n, r) => n + 8 * r.marks.length, 0)
		: busy.length * width;
	const out = new Uint8Array(data.length + BUSY_HEADER + size);
	out.set(data);
	const view = new DataView(out.buffer, data.length);
	view.setUint32(0, rows ? MARKED_MAGIC : BUSY_MAGIC, true);
	view.setUint32(4, width, true);
	view.setUint32(8, busy.length, true);
	let at = BUSY_HEADER;
	busy.forEach((k, i) => {
		out.set(Buffer.from(k.slice(2), "hex"), data.length + at);
		at += width;
		const r = rows?.[i];
		if (!rows) return;
		if (!r) throw new Error("withBusyKeys: a busy key without its rows");
		view.setUint32(at, r.rows, true);
		view.setUint32(at + 4, r.marks.length, true);
		at += 8;
		for (const m of r.marks) {
			view.setFloat64(at, m, true);
			at += 8;
		}
	});
	return out;
}

/**
 * Keys a filter holds in memory while it is built from one read of each part (below); a file with
 * more (a run's, at scale) is read twice instead: counted, then streamed.
 */
const HELD_KEYS = 1 << 18;

/** A part's keys, and the most rows one of them has. */
type PartKeys = { keys: string[]; busiest: number };
/** Each part's keys (null: more than HELD_KEYS). */
type HeldKeys = PartKeys[] | null;

/**
 * Each part's keys with their rows, one statement a part (a small chunk's filter was three: a
 * count, a stream of its keys, a search for busy ones); null once the file's keys pass HELD_KEYS.
 */
async function keysOfParts(writer: ParquetWriter, parts: readonly string[], key: string): Promise<HeldKeys> {
	const out: PartKeys[] = [];
	let held = 0;
	for (const part of parts) {
		const room = HELD_KEYS - held;
		const rows = await writer.select(
			`SELECT "${key}" AS k, count(*)::BIGINT AS n FROM read_parquet(${sqlString(part)}) GROUP BY 1 LIMIT ${room + 1}`,
		);
		if (rows.length > room) return null;
		const keys: string[] = [];
		let busiest = 0;
		for (const r of rows) {
			// As the streamed path: NULL is no key (count(DISTINCT) leaves it out, the filter skips "null").
			if (r.k === null) continue;
			keys.push(String(r.k));
			busiest = Math.max(busiest, Number(r.n));
		}
		out.push({ keys, busiest });
		held += keys.length;
	}
	return out;
}

/**
 * The key filter beside a file of `index`: chunk files get one as runs do, so a wallet or hash
 * also skips the newest chunks no run covers yet. Where the index has `busyRows`, it also lists
 * the keys with more rows than that in the file (KeyFilter.busy).
 */
export async function writeKeyFilter(
	writer: ParquetWriter,
	path: string,
	index: IndexName,
	parts = 1,
): Promise<number> {
	const files = partPaths(path, parts);
	return saveFilterOf(writer, path, index, files, await keysOfParts(writer, files, INDEXES[index].key));
}

/** A file of an index whose filter writeKeyFilters writes: its path, its parts, and the rows it holds. */
export type FilteredFile = { path: string; index: IndexName; parts: number; rows: number };

/**
 * The filters of several index files (a chunk's), as writeKeyFilter writes each: where their rows
 * together fit in HELD_KEYS, every part's keys are counted by one statement instead of one a
 * part. A small chunk's eleven index files made eleven or more statements of DuckDB's fixed cost
 * each (a follower writes such a chunk every block); larger files are read as writeKeyFilter does.
 */
export async function writeKeyFilters(writer: ParquetWriter, files: readonly FilteredFile[]): Promise<void> {
	const total = files.reduce((n, f) => n + f.rows, 0);
	if (files.length < 2 || total > HELD_KEYS) {
		for (const f of files) await writeKeyFilter(writer, f.path, f.index, f.parts);
		return;
	}
	const parts = files.map((f) => partPaths(f.path, f.parts));
	const branches = parts.flatMap((paths, i) =>
		paths.map(
			(part, j) =>
				`SELECT ${i}::INTEGER AS f, ${j}::INTEGER AS p, "${INDEXES[files[i]?.index as IndexName].key}"::VARCHAR AS k FROM read_parquet(${sqlString(part)})`,
		),
	);
	const held: PartKeys[][] = parts.map((paths) => paths.map(() => ({ keys: [], busiest: 0 })));
	// (Keys are at most the rows, so the answer holds at most HELD_KEYS rows.)
	for (const r of await writer.select(
		`SELECT f, p, k, count(*)::BIGINT AS n FROM (${branches.join(" UNION ALL ")}) GROUP BY f, p, k`,
	)) {
		// As keysOfParts: NULL is no key.
		if (r.k === null) continue;
		const part = held[Number(r.f)]?.[Number(r.p)];
		if (!part) throw new Error("writeKeyFilters: a key of no file asked");
		part.keys.push(String(r.k));
		part.busiest = Math.max(part.busiest, Number(r.n));
	}
	for (const [i, f] of files.entries()) await saveFilterOf(writer, f.path, f.index, parts[i] ?? [], held[i] ?? null);
}

/** Builds and saves the filter of the file at `path` (parts `files`) from `held`, or by reading the parts again where null. */
async function saveFilterOf(
	writer: ParquetWriter,
	path: string,
	index: IndexName,
	files: readonly string[],
	held: HeldKeys,
): Promise<number> {
	const { key, busyRows }: IndexDef = INDEXES[index];
	// Over every key-range part: one filter for the whole file (its parts hold distinct keys).
	let keys = 0;
	if (held) for (const p of held) keys += p.keys.length;
	else for (const part of files) keys += await writer.countDistinct(part, key);
	const { data } = await buildKeyFilter(
		held
			? (async function* () {
					for (const p of held) yield p.keys;
				})()
			: (async function* () {
					for (const part of files) yield* writer.streamColumn(part, key);
				})(),
		keys,
	);
	const busy: string[] = [];
	const rows: BusyKey[] = [];
	// CHAINLAKE_BUSY_ROWS sets the threshold instead, for the kinds that keep busy keys (tests:
	// busy keys from a small chain).
	const threshold = busyRows === undefined ? undefined : Number(process.env.CHAINLAKE_BUSY_ROWS) || busyRows;
	// Each busy key's rows in id order (the file's order within a key), every MARK_ROWS-th one's block kept, and the last's.
	// The busy keys are found first: an ordered list() of every key's blocks, most of them dropped by
	// HAVING, cost three times as much (BENCHMARKS.md "sixteenth figures"). A part whose keys were
	// counted above is searched only if one of them is busy.
	if (threshold !== undefined)
		for (const [i, part] of files.entries()) {
			if (held && (held[i]?.busiest ?? 0) <= Math.floor(threshold)) continue;
			for (const r of await writer.select(
				`SELECT lower(k) AS k, n, list_filter(b, lambda x, i: (i - 1) % ${MARK_ROWS} = 0 OR i = n) AS marks
				 FROM (SELECT "${key}" AS k, count(*) AS n, list(block_number ORDER BY id) AS b FROM read_parquet(${sqlString(part)})
				       WHERE "${key}" IN (SELECT "${key}" FROM read_parquet(${sqlString(part)}) GROUP BY "${key}" HAVING count(*) > ${Math.floor(threshold)})
				       GROUP BY "${key}")
				 ORDER BY k`,
			)) {
				busy.push(String(r.k));
				rows.push({ rows: Number(r.n), marks: Float64Array.from(r.marks as Iterable<unknown>, Number) });
			}
		}
	await saveKeyFilter(filterPath(path), threshold === undefined ? data : withBusyKeys(data, busy, rows));
	return keys;
}

/** Reads a filter file; a damaged or foreign file is an error naming it. */
export async function loadKeyFilter(path: string): Promise<KeyFilter> {
	const data = new Uint8Array(await readFile(path));
	const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
	const bits = data.length >= HEADER ? view.getUint32(4, true) : 0;
	const end = HEADER + Math.ceil(bits / 8);
	const damaged = () =>
		new Error(`${path} is not a chainlake key filter (damaged?): run npm run reindex to rebuild it`);
	if (
		data.length < HEADER ||
		view.getUint32(0, true) !== MAGIC ||
		view.getUint32(8, true) !== PROBES ||
		data.length < end
	) {
		throw damaged();
	}
	if (data.length === end) return over(data.subarray(HEADER, end), bits);
	// The busy keys' section, whole or the file is damaged.
	const magic = data.length >= end + BUSY_HEADER ? view.getUint32(end, true) : 0;
	if (magic !== BUSY_MAGIC && magic !== MARKED_MAGIC) throw damaged();
	const width = view.getUint32(end + 4, true);
	const count = view.getUint32(end + 8, true);
	const busy = new Set<string>();
	const rows = magic === MARKED_MAGIC ? new Map<string, BusyKey>() : undefined;
	let at = end + BUSY_HEADER;
	for (let i = 0; i < count; i++) {
		if (at + width + (rows ? 8 : 0) > data.length) throw damaged();
		const k = `0x${Buffer.from(data.subarray(at, at + width)).toString("hex")}`;
		busy.add(k);
		at += width;
		if (!rows) continue;
		const n = view.getUint32(at, true);
		const marks = new Float64Array(view.getUint32(at + 4, true));
		at += 8;
		if (at + 8 * marks.length > data.length) throw damaged();
		for (let j = 0; j < marks.length; j++, at += 8) marks[j] = view.getFloat64(at, true);
		rows.set(k, { rows: n, marks });
	}
	if (at !== data.length) throw damaged();
	return over(data.subarray(HEADER, end), bits, busy, rows);
}

/** The file of a run's filter. */
export const filterPath = (runPath: string): string => `${runPath}.filter`;
