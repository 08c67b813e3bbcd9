/**
 * Exact sums of uint256 amounts in DuckDB and Parquet. Amounts are stored as decimal text (the
 * datasets' uint256 columns); DuckDB's widest integers are 128-bit, and it writes HUGEINT to
 * Parquet as DOUBLE. So an amount is cut into five 18-digit decimal limbs (each < 10^18, a
 * BIGINT), limbs are summed separately as DECIMAL(38,0) (exact in Parquet, and room for 10^20
 * summed limbs), and the value is put back together in JS with BigInt:
 * Σ d_k × 10^(18k). Signed sums (what came in minus what went out) need no carries: a limb sum
 * may be negative; only the total is a balance.
 */

/** Limb columns, least significant first: d_k is worth 10^(18k). */
export const LIMBS = ["d0", "d1", "d2", "d3", "d4"] as const;
const DIGITS = 18;
const WIDTH = DIGITS * LIMBS.length; // 90 digits: uint256 has at most 78

/** SQL of limb k (BIGINT) of a decimal text amount `v` already left-padded to WIDTH digits. */
const limbSql = (padded: string, k: number) =>
	`CAST(substr(${padded}, ${WIDTH - DIGITS * (k + 1) + 1}, ${DIGITS}) AS BIGINT)`;

/**
 * Per (holder, token): the net change of each ERC-20 token over the transfers rows of `src`
 * (recipient +value, sender −value; a self-transfer nets zero), as limb sums, with the first and
 * last block that changed it and the transfers counted. Mints come from and burns go to the zero
 * address, which therefore holds minus the supply.
 */
export function erc20DeltasSql(src: string): string {
	const side = (holder: string, sign: number) =>
		`SELECT ${holder} AS address, contract AS token, block_number, ${sign} AS sign, lpad(value, ${WIDTH}, '0') AS v FROM ${src} WHERE token_standard = 'erc20' AND value IS NOT NULL AND ${holder} IS NOT NULL`;
	const sums = LIMBS.map((l, k) => `sum(sign * ${limbSql("v", k)})::DECIMAL(38,0) AS ${l}`).join(", ");
	return `SELECT address, token, ${sums}, min(block_number) AS first_block, max(block_number) AS last_block, count(*)::BIGINT AS transfers FROM (${side("recipient", 1)} UNION ALL ${side("sender", -1)}) GROUP BY address, token`;
}

/** SQL of the signed limb sums (as text, for amountOf) of decimal text amounts `value` times `sign` (an INT expression). */
export const signedLimbSumsSql = (sign: string, value: string): string =>
	LIMBS.map((l, k) => `CAST(sum(${sign} * ${limbSql(`lpad(${value}, ${WIDTH}, '0')`, k)}) AS VARCHAR) AS ${l}`).join(
		", ",
	);

/** The limb sums (HUGEINT, named d0..d4) of decimal text amounts `value` times `sign`. */
export const signedLimbSumsHugeSql = (sign: string, value: string): string =>
	LIMBS.map((l, k) => `sum(${sign} * ${limbSql(`lpad(${value}, ${WIDTH}, '0')`, k)})::HUGEINT AS ${l}`).join(", ");

/**
 * Columns n0..n4 of limb sums `d0`..`d4` (HUGEINT) with the carries done: n0..n3 in [0, 10^18),
 * n4 signed. Two amounts then compare as (n4, n3, n2, n1, n0) lexicographically, and an amount
 * is zero exactly when every n_k is. DuckDB lets a select list use its earlier aliases.
 */
export function normalizedLimbsSql(): string {
	const base = `1${"0".repeat(DIGITS)}::HUGEINT`;
	// Floor division (DuckDB's // truncates toward zero).
	const floorDiv = (x: string) =>
		`(CASE WHEN ${x} >= 0 THEN ${x} // ${base} ELSE -((-${x} + ${base} - 1) // ${base}) END)`;
	const parts: string[] = [];
	let carried = "d0";
	for (let k = 0; k < LIMBS.length - 1; k++) {
		parts.push(`${carried} AS t${k}`, `${floorDiv(`t${k}`)} AS c${k}`, `t${k} - c${k} * ${base} AS n${k}`);
		carried = `(d${k + 1} + c${k})`;
	}
	parts.push(`${carried} AS n${LIMBS.length - 1}`);
	return parts.join(", ");
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
