import { LIMB_DIGITS, LIMBS } from "./amounts.js";

/*
 * Balance changes ("moves") read from transfers rows, and their per-holder sums ("deltas"): what
 * the balance indexes hold (indexes.ts) and what a balance query sums from the transfers of the
 * blocks no index file covers yet (query/deltas.ts). One SQL source for both, so the two agree.
 *
 * A kind of holding is keyed by the token alone (ERC-20) or by the token and its id (ERC-721 and
 * ERC-1155, whose TransferBatch rows carry their ids and amounts as lists, unnested here; an
 * ERC-721 transfer moves 1).
 */

export type HoldingKind = "erc20" | "nft";

/** Columns besides the holder (`address`) that key a holding of each kind. */
export const HOLDING_KEYS: Record<HoldingKind, readonly string[]> = {
	erc20: ["token"],
	nft: ["token", "token_id"],
};

const WIDTH = LIMB_DIGITS * LIMBS.length;

/** Token rows of `src` as (block_number, token, token_id, sender, recipient, value[, extra]). */
function items(src: string, kind: HoldingKind, extra: readonly string[]): string {
	const more = extra
		.filter((c) => !["sender", "recipient"].includes(c))
		.map((c) => `, ${c}`)
		.join("");
	if (kind === "erc20")
		return `SELECT block_number, contract AS token, NULL::VARCHAR AS token_id, sender, recipient, value${more} FROM ${src} WHERE token_standard = 'erc20' AND value IS NOT NULL`;
	return `SELECT block_number, contract AS token, token_id, sender, recipient, CASE WHEN token_standard = 'erc721' THEN '1' ELSE value END AS value${more} FROM ${src} WHERE token_standard IN ('erc721', 'erc1155') AND token_id IS NOT NULL
		UNION ALL SELECT block_number, contract AS token, unnest(batch_token_ids) AS token_id, sender, recipient, unnest(batch_values) AS value${more} FROM ${src} WHERE token_standard = 'erc1155' AND batch_token_ids IS NOT NULL`;
}

/**
 * One row per side of each token movement in `src`: the recipient's (+1) and the sender's (−1),
 * as (address, token, token_id, block_number, sign, value, ...extra) with value the decimal text
 * amount. Mints come from and burns go to the zero address, which therefore holds minus the
 * supply; a self-transfer nets zero.
 */
export function movesSql(src: string, kind: HoldingKind, extra: readonly string[] = []): string {
	const more = extra.map((c) => `, ${c}`).join("");
	const side = (holder: string, sign: number) =>
		`SELECT ${holder} AS address, token, token_id, block_number, ${sign} AS sign, value${more} FROM i WHERE ${holder} IS NOT NULL AND value IS NOT NULL`;
	return `WITH i AS (${items(src, kind, extra)}) ${side("recipient", 1)} UNION ALL ${side("sender", -1)}`;
}

/** SQL of limb k (BIGINT) of a decimal text amount `v` already left-padded to WIDTH digits. */
export const limbSql = (padded: string, k: number) =>
	`CAST(substr(${padded}, ${WIDTH - LIMB_DIGITS * (k + 1) + 1}, ${LIMB_DIGITS}) AS BIGINT)`;

/**
 * SQL of the signed limb sums (named d0..d8) of decimal text amounts `value` times `sign` (an INT
 * expression): as text for amountOf, HUGEINT for further sums in SQL, or BIGINT to store.
 */
export const signedLimbSumsSql = (
	sign: string,
	value: string,
	as: "VARCHAR" | "HUGEINT" | "BIGINT" = "VARCHAR",
): string =>
	LIMBS.map((l, k) => `CAST(sum(${sign} * ${limbSql(`lpad(${value}, ${WIDTH}, '0')`, k)}) AS ${as}) AS ${l}`).join(
		", ",
	);

/**
 * Per holding (address and HOLDING_KEYS): the net change over the transfers rows of `src`, as
 * limb sums (amounts.ts), with the first and last block that changed it and the moves counted.
 */
export function deltasSql(src: string, kind: HoldingKind): string {
	const keys = ["address", ...HOLDING_KEYS[kind]].join(", ");
	return `SELECT ${keys}, ${signedLimbSumsSql("sign", "value", "BIGINT")}, min(block_number) AS first_block, max(block_number) AS last_block, count(*)::BIGINT AS transfers FROM (${movesSql(src, kind)}) GROUP BY ${keys}`;
}

/** How merged runs fold delta files `src`: the sums of each holding. */
export function mergeDeltasSql(src: string, kind: HoldingKind): string {
	const keys = ["address", ...HOLDING_KEYS[kind]].join(", ");
	return `SELECT ${keys}, ${LIMBS.map((l) => `sum(${l})::BIGINT AS ${l}`).join(", ")}, min(first_block) AS first_block, max(last_block) AS last_block, sum(transfers)::BIGINT AS transfers FROM ${src} GROUP BY ${keys}`;
}

/** The delta files' columns (for an empty relation where none is listed). */
export const deltaColumns = (kind: HoldingKind): Record<string, string> => ({
	address: "VARCHAR",
	...Object.fromEntries(HOLDING_KEYS[kind].map((k) => [k, "VARCHAR"])),
	...Object.fromEntries(LIMBS.map((l) => [l, "BIGINT"])),
	first_block: "UBIGINT",
	last_block: "UBIGINT",
	transfers: "BIGINT",
});
