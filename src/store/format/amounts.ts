/**
 * Exact sums of uint256 amounts in DuckDB and Parquet. Amounts are stored as decimal text (the
 * datasets' uint256 columns); DuckDB's widest integers are 128-bit, and it writes HUGEINT to
 * Parquet as DOUBLE. So an amount is cut into nine 9-digit decimal limbs (each < 10^9), limbs
 * are summed separately and stored as BIGINT (room for 9 × 10^9 summed amounts per holder and
 * token; BIGINT rather than DECIMAL(38,0) because Parquet readers such as hyparquet read
 * decimals as floating point), and the value is put back together with BigInt:
 * Σ d_k × 10^(9k). Signed sums (what came in minus what went out) need no carries: a limb sum
 * may be negative; only the total is a balance.
 */

/** Limb columns, least significant first: d_k is worth 10^(9k). */
export const LIMBS = ["d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"] as const;
export const LIMB_DIGITS = 9;
const DIGITS = LIMB_DIGITS;

/** Limbs per normalized part: three 9-digit limbs stay within HUGEINT (|sum| < 2^63 × 10^18). */
const PER_PART = 3;
/** Normalized parts of an amount (normalizedPartsSql): m0, m1, m2, least significant first. */
export const PARTS = Array.from({ length: LIMBS.length / PER_PART }, (_, i) => `m${i}`);
export const PART_DIGITS = LIMB_DIGITS * PER_PART;

/**
 * Columns m0, m1, m2 of limb sums `d0`..`d8` (HUGEINT): the limbs folded three at a time into
 * parts worth 10^(27i), with the carries done, so m0 and m1 lie in [0, 10^27) and m2 is signed.
 * Two amounts then compare as (m2, m1, m0) lexicographically, and an amount is zero exactly when
 * every part is. Two carries only: a chain of one per limb grows DuckDB's expressions (it
 * inlines a select list's earlier aliases) past any query budget, measured.
 */
export function normalizedPartsSql(): string {
	const base = `1${"0".repeat(PART_DIGITS)}::HUGEINT`;
	// Floor division (DuckDB's // truncates toward zero).
	const floorDiv = (x: string) =>
		`(CASE WHEN ${x} >= 0 THEN ${x} // ${base} ELSE -((-${x} + ${base} - 1) // ${base}) END)`;
	const group = (i: number) =>
		`(${Array.from({ length: PER_PART }, (_, j) => `d${i * PER_PART + j}::HUGEINT * 1${"0".repeat(LIMB_DIGITS * j)}::HUGEINT`).join(" + ")})`;
	const cols: string[] = [];
	let carried = group(0);
	for (let i = 0; i < PARTS.length - 1; i++) {
		cols.push(`${carried} AS g${i}`, `${floorDiv(`g${i}`)} AS c${i}`, `g${i} - c${i} * ${base} AS m${i}`);
		carried = `(${group(i + 1)} + c${i})`;
	}
	cols.push(`${carried} AS m${PARTS.length - 1}`);
	return cols.join(", ");
}

/**
 * SQL of the exact amount of limb sums `d0`..`d8` (HUGEINT) as a BIGNUM, DuckDB's integer of any
 * size: each limb's decimal text shifted by appending its zeros, then added (BIGNUM adds and
 * compares exactly; it multiplies in DOUBLE, so no product). Each limb is named once, so the
 * expression stays small where normalizedPartsSql's carries, inlined by DuckDB wherever a part
 * is named, cost a holders page 12 ms of planning per statement (measured on M: 15 → 3 ms of
 * EXPLAIN, the page 20 → 9 ms). The ranks file keeps the parts (written once per ranks build).
 */
export function amountSql(): string {
	return LIMBS.map((l, i) => `(coalesce(${l}, 0)::VARCHAR || '${"0".repeat(LIMB_DIGITS * i)}')::BIGNUM`).join(" + ");
}

/** The normalized parts of `amount` (normalizedPartsSql), least significant first, as decimal text. */
export function partsOfAmount(amount: bigint): string[] {
	const base = 10n ** BigInt(PART_DIGITS);
	const out: string[] = [];
	let rest = amount;
	for (let i = 0; i < PARTS.length - 1; i++) {
		const part = ((rest % base) + base) % base;
		out.push(part.toString());
		rest = (rest - part) / base;
	}
	out.push(rest.toString());
	return out;
}

/**
 * SQL of a necessary condition for limbs d0..d8 to add up to a positive amount, cheap to test:
 * some limb is positive (limbs all at most zero add up to at most zero). Put before
 * amountSql, it leaves out the zero holdings (everything a wallet sold) before that SQL's
 * text and BIGNUM work, which costs microseconds a row.
 */
export const somePositiveLimbSql = (): string => `(${LIMBS.map((l) => `${l} > 0`).join(" OR ")})`;

/** The value of normalized parts (decimal text, least significant first). */
export function amountOfParts(parts: readonly (string | null | undefined)[]): bigint {
	let total = 0n;
	for (let i = parts.length - 1; i >= 0; i--) total = total * 10n ** BigInt(PART_DIGITS) + BigInt(parts[i] ?? 0);
	return total;
}

/** SQL summing the limbs of relation rows (each `sum(d_k)` as text, for amountOf). */
export const limbSumsSql = (filter = ""): string =>
	LIMBS.map((l) => `CAST(sum(${l}) ${filter} AS VARCHAR) AS ${l}`).join(", ");

/** The value of limb sums (decimal text or numbers; null counts as 0). */
export function amountOf(limbs: readonly (string | number | bigint | null | undefined)[]): bigint {
	let total = 0n;
	for (let k = limbs.length - 1; k >= 0; k--) total = total * 10n ** BigInt(DIGITS) + BigInt(limbs[k] ?? 0);
	return total;
}

/** `raw` / 10^decimals as exact decimal text ("1.5", "0.000001", "42"). */
export function withDecimals(raw: bigint, decimals: number): string {
	if (decimals <= 0) return raw.toString();
	const negative = raw < 0n;
	const digits = (negative ? -raw : raw).toString().padStart(decimals + 1, "0");
	const whole = digits.slice(0, -decimals);
	const fraction = digits.slice(-decimals).replace(/0+$/, "");
	return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}
