/**
 * A Zstandard decoder (RFC 8878), for reading our zstd-compressed Parquet files with hyparquet,
 * which decodes only snappy by itself; Node 20's zlib has no zstd. Plain and unoptimised, without
 * dictionaries or checksum verification: a test reader, not a library. Written from the RFC
 * (and its educational decoder's structure).
 */

class ZstdError extends Error {}
const fail = (what: string): never => {
	throw new ZstdError(`zstd: ${what}`);
};

const highBit = (n: number) => 31 - Math.clz32(n);

/** A little-endian bit stream read forward (FSE table descriptions). */
class ForwardBits {
	bit: number;
	constructor(
		private readonly src: Uint8Array,
		start: number,
	) {
		this.bit = start * 8;
	}
	read(n: number): number {
		let v = 0;
		for (let i = 0; i < n; i++, this.bit++) {
			v |= (((this.src[this.bit >> 3] ?? 0) >> (this.bit & 7)) & 1) << i;
		}
		return v >>> 0;
	}
	rewind(n: number) {
		this.bit -= n;
	}
	/** The byte after the last bit read. */
	get byte(): number {
		return (this.bit + 7) >> 3;
	}
}

/** A bit stream read backward from its end marker (Huffman and FSE streams); bits below its start read as 0. */
class BackwardBits {
	pos: number;
	constructor(
		private readonly src: Uint8Array,
		private readonly start: number,
		end: number,
	) {
		const last = src[end - 1] ?? 0;
		if (end <= start || last === 0) fail("bad end of bit stream");
		this.pos = (end - 1 - start) * 8 + highBit(last);
	}
	/** The `n` bits just below the position, as a number (n <= 32). */
	read(n: number): number {
		if (n === 0) return 0;
		this.pos -= n;
		const pos = this.pos;
		if (pos >= 0 && n <= 24) {
			const s = this.src;
			const i = this.start + (pos >> 3);
			const word = (s[i] ?? 0) | ((s[i + 1] ?? 0) << 8) | ((s[i + 2] ?? 0) << 16) | ((s[i + 3] ?? 0) << 24);
			return (word >>> (pos & 7)) & ((1 << n) - 1);
		}
		let v = 0;
		for (let i = n - 1; i >= 0; i--) {
			const b = this.pos + i;
			v = v * 2 + (b < 0 ? 0 : ((this.src[this.start + (b >> 3)] as number) >> (b & 7)) & 1);
		}
		return v;
	}
}

interface FseTable {
	log: number;
	symbol: Uint16Array;
	bits: Uint8Array;
	base: Uint16Array;
}

function buildFse(norm: number[], log: number): FseTable {
	const size = 1 << log;
	const symbol = new Uint16Array(size);
	const bits = new Uint8Array(size);
	const base = new Uint16Array(size);
	const next = new Array<number>(norm.length).fill(0);
	let high = size;
	norm.forEach((p, s) => {
		if (p === -1) {
			symbol[--high] = s;
			next[s] = 1;
		}
	});
	const step = (size >> 1) + (size >> 3) + 3;
	let pos = 0;
	norm.forEach((p, s) => {
		if (p <= 0) return;
		next[s] = p;
		for (let i = 0; i < p; i++) {
			symbol[pos] = s;
			do pos = (pos + step) & (size - 1);
			while (pos >= high);
		}
	});
	if (pos !== 0) fail("bad FSE distribution");
	for (let i = 0; i < size; i++) {
		const s = symbol[i] as number;
		const state = next[s] as number;
		next[s] = state + 1;
		bits[i] = log - highBit(state);
		base[i] = (state << (bits[i] as number)) - size;
	}
	return { log, symbol, bits, base };
}

/** Reads an FSE table description at `start`; returns the table and the byte after it. */
function readFse(src: Uint8Array, start: number, maxLog: number, maxSymbols: number): [FseTable, number] {
	const r = new ForwardBits(src, start);
	const log = 5 + r.read(4);
	if (log > maxLog) fail("FSE accuracy too large");
	let remaining = 1 << log;
	const norm: number[] = [];
	while (remaining > 0 && norm.length < maxSymbols) {
		const nbits = highBit(remaining + 1) + 1;
		let v = r.read(nbits);
		const lowMask = (1 << (nbits - 1)) - 1;
		const threshold = (1 << nbits) - 1 - (remaining + 1);
		if ((v & lowMask) < threshold) {
			r.rewind(1);
			v &= lowMask;
		} else if (v > lowMask) {
			v -= threshold;
		}
		const p = v - 1;
		remaining -= Math.abs(p);
		norm.push(p);
		if (p === 0) {
			for (;;) {
				const repeat = r.read(2);
				for (let i = 0; i < repeat; i++) norm.push(0);
				if (repeat !== 3) break;
			}
		}
	}
	if (remaining !== 0) fail("bad FSE table description");
	return [buildFse(norm, log), r.byte];
}

const rleTable = (s: number): FseTable => ({
	log: 0,
	symbol: Uint16Array.of(s),
	bits: Uint8Array.of(0),
	base: Uint16Array.of(0),
});

interface HufTable {
	maxBits: number;
	symbol: Uint8Array;
	bits: Uint8Array;
}

/** Reads a Huffman tree description at `start`; returns the table and the byte after it. */
function readHuffman(src: Uint8Array, start: number): [HufTable, number] {
	const header = src[start] as number;
	const weights: number[] = [];
	let end: number;
	if (header < 128) {
		end = start + 1 + header;
		const [table, streamStart] = readFse(src, start + 1, 6, 256);
		const bits = new BackwardBits(src, streamStart, end);
		// Two states take turns over one table, until the stream runs out.
		let s1 = bits.read(table.log);
		let s2 = bits.read(table.log);
		for (;;) {
			weights.push(table.symbol[s1] as number);
			s1 = (table.base[s1] as number) + bits.read(table.bits[s1] as number);
			if (bits.pos < 0) {
				weights.push(table.symbol[s2] as number);
				break;
			}
			weights.push(table.symbol[s2] as number);
			s2 = (table.base[s2] as number) + bits.read(table.bits[s2] as number);
			if (bits.pos < 0) {
				weights.push(table.symbol[s1] as number);
				break;
			}
			if (weights.length > 255) fail("too many Huffman weights");
		}
	} else {
		const n = header - 127;
		end = start + 1 + Math.ceil(n / 2);
		for (let i = 0; i < n; i++) {
			const b = src[start + 1 + (i >> 1)] as number;
			weights.push(i % 2 === 0 ? b >> 4 : b & 15);
		}
	}
	let sum = 0;
	for (const w of weights) if (w > 0) sum += 1 << (w - 1);
	if (sum === 0) fail("empty Huffman weights");
	const maxBits = highBit(sum) + 1;
	const left = (1 << maxBits) - sum;
	if (left & (left - 1)) fail("bad Huffman weights");
	weights.push(highBit(left) + 1);
	const nbits = weights.map((w) => (w > 0 ? maxBits + 1 - w : 0));
	const size = 1 << maxBits;
	const symbol = new Uint8Array(size);
	const bits = new Uint8Array(size);
	const rankCount = new Array<number>(maxBits + 1).fill(0);
	for (const b of nbits) rankCount[b] = (rankCount[b] as number) + 1;
	const rankIdx = new Array<number>(maxBits + 1).fill(0);
	for (let i = maxBits; i >= 1; i--) {
		rankIdx[i - 1] = (rankIdx[i] as number) + (rankCount[i] as number) * (1 << (maxBits - i));
		bits.fill(i, rankIdx[i], rankIdx[i - 1]);
	}
	if (rankIdx[0] !== size) fail("bad Huffman table");
	nbits.forEach((b, s) => {
		if (b === 0) return;
		const code = rankIdx[b] as number;
		const len = 1 << (maxBits - b);
		symbol.fill(s, code, code + len);
		rankIdx[b] = code + len;
	});
	return [{ maxBits, symbol, bits }, end];
}

function huffmanStream(
	t: HufTable,
	src: Uint8Array,
	start: number,
	end: number,
	out: Uint8Array,
	at: number,
	n: number,
) {
	const bits = new BackwardBits(src, start, end);
	const mask = (1 << t.maxBits) - 1;
	let state = bits.read(t.maxBits);
	for (let i = 0; i < n; i++) {
		out[at + i] = t.symbol[state] as number;
		const nb = t.bits[state] as number;
		state = ((state << nb) + bits.read(nb)) & mask;
	}
	if (bits.pos !== -t.maxBits) fail("Huffman stream not fully consumed");
}

const LL_BASE = [
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024,
	2048, 4096, 8192, 16384, 32768, 65536,
];
const LL_BITS = [
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
];
const ML_BASE = [
	3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
	34, 35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539,
];
const ML_BITS = [
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3,
	3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
];
const LL_DEFAULT = buildFse(
	[4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1],
	6,
);
const ML_DEFAULT = buildFse(
	[
		1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1,
	],
	6,
);
const OF_DEFAULT = buildFse(
	[1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1],
	5,
);

/** A growing output buffer. */
class Output {
	buf: Uint8Array;
	length = 0;
	constructor(capacity: number) {
		this.buf = new Uint8Array(Math.max(capacity, 1024));
	}
	ensure(extra: number) {
		if (this.length + extra <= this.buf.length) return;
		const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + extra));
		next.set(this.buf.subarray(0, this.length));
		this.buf = next;
	}
	push(bytes: Uint8Array, start = 0, n = bytes.length - start) {
		this.ensure(n);
		if (n < 32) {
			const b = this.buf;
			for (let i = 0; i < n; i++) b[this.length + i] = bytes[start + i] as number;
		} else this.buf.set(bytes.subarray(start, start + n), this.length);
		this.length += n;
	}
	copyMatch(offset: number, n: number) {
		if (offset > this.length || offset === 0) fail("match offset out of range");
		this.ensure(n);
		const b = this.buf;
		const from = this.length - offset;
		// Overlapping matches repeat what they copy: byte by byte, as the format means them.
		if (offset >= n && n >= 32) b.copyWithin(this.length, from, from + n);
		else for (let i = 0; i < n; i++) b[this.length + i] = b[from + i] as number;
		this.length += n;
	}
}

interface FrameState {
	huffman: HufTable | null;
	ll: FseTable | null;
	of: FseTable | null;
	ml: FseTable | null;
	rep: [number, number, number];
}

function decodeLiterals(src: Uint8Array, p: number, f: FrameState): [Uint8Array, number] {
	const b0 = src[p] as number;
	const type = b0 & 3;
	const sizeFormat = (b0 >> 2) & 3;
	if (type < 2) {
		let regen: number;
		let header: number;
		if ((sizeFormat & 1) === 0) [regen, header] = [b0 >> 3, 1];
		else if (sizeFormat === 1) [regen, header] = [(b0 >> 4) + ((src[p + 1] as number) << 4), 2];
		else [regen, header] = [(b0 >> 4) + ((src[p + 1] as number) << 4) + ((src[p + 2] as number) << 12), 3];
		if (type === 0) return [src.slice(p + header, p + header + regen), p + header + regen];
		return [new Uint8Array(regen).fill(src[p + header] as number), p + header + 1];
	}
	const b = (i: number) => src[p + i] as number;
	let regen: number;
	let comp: number;
	let header: number;
	const streams = sizeFormat === 0 ? 1 : 4;
	if (sizeFormat < 2) {
		header = 3;
		regen = (b0 >> 4) | ((b(1) & 0x3f) << 4);
		comp = (b(1) >> 6) | (b(2) << 2);
	} else if (sizeFormat === 2) {
		header = 4;
		regen = (b0 >> 4) | (b(1) << 4) | ((b(2) & 3) << 12);
		comp = (b(2) >> 2) | (b(3) << 6);
	} else {
		header = 5;
		regen = (b0 >> 4) | (b(1) << 4) | ((b(2) & 0x3f) << 12);
		comp = (b(2) >> 6) | (b(3) << 2) | (b(4) << 10);
	}
	let q = p + header;
	const end = q + comp;
	if (type === 2) [f.huffman, q] = readHuffman(src, q);
	const table = f.huffman ?? fail("treeless literals without a previous table");
	const out = new Uint8Array(regen);
	if (streams === 1) {
		huffmanStream(table, src, q, end, out, 0, regen);
	} else {
		const sizes = [0, 2, 4].map((i) => (src[q + i] as number) | ((src[q + i + 1] as number) << 8));
		const segment = Math.floor((regen + 3) / 4);
		let s = q + 6;
		for (let i = 0; i < 4; i++) {
			const size = i < 3 ? (sizes[i] as number) : end - s;
			const n = i < 3 ? segment : regen - 3 * segment;
			huffmanStream(table, src, s, s + size, out, i * segment, n);
			s += size;
		}
	}
	return [out, end];
}

function decodeBlock(src: Uint8Array, start: number, end: number, f: FrameState, out: Output) {
	const [literals, afterLiterals] = decodeLiterals(src, start, f);
	let p = afterLiterals;
	const b0 = src[p] as number;
	let count: number;
	if (b0 === 0) count = 0;
	else if (b0 < 128) [count, p] = [b0, p + 1];
	else if (b0 < 255) [count, p] = [((b0 - 128) << 8) + (src[p + 1] as number), p + 2];
	else [count, p] = [(src[p + 1] as number) + ((src[p + 2] as number) << 8) + 0x7f00, p + 3];
	if (count === 0) {
		out.push(literals);
		return;
	}
	const modes = src[p++] as number;
	const table = (mode: number, predefined: FseTable, maxLog: number, maxSymbols: number, prev: FseTable | null) => {
		if (mode === 0) return predefined;
		if (mode === 1) return rleTable(src[p++] as number);
		if (mode === 2) {
			const [t, next] = readFse(src, p, maxLog, maxSymbols);
			p = next;
			return t;
		}
		return prev ?? fail("repeated sequence table without a previous one");
	};
	f.ll = table(modes >> 6, LL_DEFAULT, 9, 36, f.ll);
	f.of = table((modes >> 4) & 3, OF_DEFAULT, 8, 32, f.of);
	f.ml = table((modes >> 2) & 3, ML_DEFAULT, 9, 53, f.ml);
	const { ll, of, ml } = f as Required<{ [K in keyof FrameState]: NonNullable<FrameState[K]> }>;
	const bits = new BackwardBits(src, p, end);
	let sLL = bits.read(ll.log);
	let sOF = bits.read(of.log);
	let sML = bits.read(ml.log);
	let lit = 0;
	const rep = f.rep;
	for (let i = 0; i < count; i++) {
		const ofCode = of.symbol[sOF] as number;
		const mlCode = ml.symbol[sML] as number;
		const llCode = ll.symbol[sLL] as number;
		const ofValue = 2 ** ofCode + bits.read(ofCode);
		const mlen = (ML_BASE[mlCode] ?? fail("bad match length code")) + bits.read(ML_BITS[mlCode] as number);
		const llen = (LL_BASE[llCode] ?? fail("bad literal length code")) + bits.read(LL_BITS[llCode] as number);
		let offset: number;
		if (ofValue > 3) {
			offset = ofValue - 3;
			rep[2] = rep[1];
			rep[1] = rep[0];
			rep[0] = offset;
		} else {
			const idx = ofValue - 1 + (llen === 0 ? 1 : 0);
			if (idx === 0) offset = rep[0];
			else {
				offset = idx === 3 ? rep[0] - 1 : rep[idx as 1 | 2];
				if (idx > 1) rep[2] = rep[1];
				rep[1] = rep[0];
				rep[0] = offset;
			}
		}
		if (i < count - 1) {
			sLL = (ll.base[sLL] as number) + bits.read(ll.bits[sLL] as number);
			sML = (ml.base[sML] as number) + bits.read(ml.bits[sML] as number);
			sOF = (of.base[sOF] as number) + bits.read(of.bits[sOF] as number);
		}
		if (lit + llen > literals.length) fail("literal length past the literals");
		out.push(literals, lit, llen);
		lit += llen;
		out.copyMatch(offset, mlen);
	}
	if (bits.pos !== 0) fail("sequence stream not fully consumed");
	out.push(literals, lit);
}

/** Decompresses one or more zstd frames (skippable frames are skipped). */
export function zstdDecompress(src: Uint8Array, sizeHint = 0): Uint8Array {
	const out = new Output(sizeHint);
	let p = 0;
	while (p < src.length) {
		const magic =
			((src[p] as number) |
				((src[p + 1] as number) << 8) |
				((src[p + 2] as number) << 16) |
				((src[p + 3] as number) << 24)) >>>
			0;
		p += 4;
		if ((magic & 0xfffffff0) === 0x184d2a50) {
			const size =
				((src[p] as number) |
					((src[p + 1] as number) << 8) |
					((src[p + 2] as number) << 16) |
					((src[p + 3] as number) << 24)) >>>
				0;
			p += 4 + size;
			continue;
		}
		if (magic !== 0xfd2fb528) fail(`bad magic number ${magic.toString(16)}`);
		const fhd = src[p++] as number;
		const fcsFlag = fhd >> 6;
		const single = (fhd >> 5) & 1;
		const checksum = (fhd >> 2) & 1;
		const dictFlag = fhd & 3;
		if (!single) p++; // window descriptor: the whole output is the window here
		const dictBytes = [0, 1, 2, 4][dictFlag] as number;
		let dict = 0;
		for (let i = 0; i < dictBytes; i++) dict |= (src[p + i] as number) << (8 * i);
		if (dict !== 0) fail("dictionaries are not supported");
		p += dictBytes;
		p += fcsFlag === 0 ? single : ([0, 2, 4, 8][fcsFlag] as number);
		const f: FrameState = { huffman: null, ll: null, of: null, ml: null, rep: [1, 4, 8] };
		for (let last = 0; !last; ) {
			const h = (src[p] as number) | ((src[p + 1] as number) << 8) | ((src[p + 2] as number) << 16);
			p += 3;
			last = h & 1;
			const type = (h >> 1) & 3;
			const size = h >>> 3;
			if (type === 0) {
				out.push(src.subarray(p, p + size));
				p += size;
			} else if (type === 1) {
				out.push(new Uint8Array(size).fill(src[p] as number));
				p += 1;
			} else if (type === 2) {
				decodeBlock(src, p, p + size, f, out);
				p += size;
			} else fail("reserved block type");
			if (p > src.length) fail("truncated frame");
		}
		if (checksum) p += 4;
	}
	return out.buf.subarray(0, out.length);
}
