/**
 * A seeded PRNG for randomly timed kills: the seed comes from CHAINLAKE_CRASH_SEED or is drawn,
 * and is printed, so a failing run can be repeated with the same kill moments.
 */
export function seededRandom(label: string): {
	seed: number;
	next: () => number;
	int: (lo: number, hi: number) => number;
} {
	const fromEnv = process.env.CHAINLAKE_CRASH_SEED;
	const seed = fromEnv ? Number(fromEnv) >>> 0 : Math.floor(Math.random() * 2 ** 32);
	process.stderr.write(`${label}: CHAINLAKE_CRASH_SEED=${seed}\n`);
	// mulberry32: tiny, fast, and good enough to spread kill moments.
	let a = seed;
	const next = () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
	};
	return { seed, next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)) };
}
