import type { DatasetName } from "../../extract/rows.js";
import { LIMB_DIGITS, LIMBS } from "./amounts.js";

/*
 * Balance changes ("moves") read from transfers rows, and their per-holder sums ("deltas"): what
 * the balance indexes hold (indexes.ts) and what a balance query sums from the transfers of the
 * blocks no index file covers yet (query/deltas.ts). One SQL source for both, so the two agree.
 *
 * A kind of holding is keyed by the token alone (ERC-20) or by the token and its id (ERC-721 and
 * ERC-1155, whose TransferBatch rows carry their ids and amounts as lists, unnested here; an
 * ERC-721 transfer moves 1). The native currency is one holding per account (`token` 'native'),
 * moved by value transfers, gas fees, fee tips, withdrawals and block rewards (nativeMovesSql).
 */

export type HoldingKind = "erc20" | "nft" | "native";

/** Columns besides the holder (`address`) that key a holding of each kind. */
export const HOLDING_KEYS: Record<HoldingKind, readonly string[]> = {
	erc20: ["token"],
	nft: ["token", "token_id"],
	native: ["token"],
};

/** The datasets native moves are read from. */
export const NATIVE_SOURCES = [
	"transfers",
	"transactions",
	"blocks",
	"traces",
] as const satisfies readonly DatasetName[];

/** `'<decimal>'` text of a product of a U256 text column and an integer one (fees, tips: far below 2^127). */
const times = (u256: string, n: string) => `CAST(CAST(${u256} AS HUGEINT) * ${n} AS VARCHAR)`;

/**
 * One row per change of an account's native balance in the datasets `rel(d)` of the same blocks,
 * in the shape of movesSql: value transfers (calls, creates, self-destructs: transfers rows whose
 * token_standard is native, from traces), the sender's gas fee (gas used × effective gas price,
 * plus blob gas × blob gas price), the block's fee recipient's tip (gas used × (effective gas
 * price − base fee); the base fee and blob fees are burnt), beacon withdrawals (gwei), and
 * block and uncle rewards (traces of type reward). Not covered: L2 fees (an OP chain's L1 fee).
 */
export function nativeMovesSql(rel: (d: DatasetName) => string, extra = ""): string {
	const row = (address: string, sign: number, value: string, from: string, where: string) =>
		`SELECT ${address} AS address, 'native' AS token, NULL::VARCHAR AS token_id, block_number, ${sign} AS sign, ${value} AS value FROM ${from} WHERE ${address} IS NOT NULL AND ${where}${extra}`;
	return [
		row("recipient", 1, "value", rel("transfers"), "token_standard = 'native' AND value IS NOT NULL"),
		row("sender", -1, "value", rel("transfers"), "token_standard = 'native' AND value IS NOT NULL"),
		row("from_address", -1, "fee", rel("transactions"), "fee IS NOT NULL AND fee <> '0'"),
		row(
			"from_address",
			-1,
			times("blob_gas_price", "blob_gas_used"),
			rel("transactions"),
			"blob_gas_used IS NOT NULL AND blob_gas_used > 0 AND blob_gas_price IS NOT NULL",
		),
		row(
			"miner",
			1,
			"tip",
			`(SELECT b.miner, x.block_number, ${times("x.effective_gas_price", "x.gas_used")}::HUGEINT - ${times("coalesce(b.base_fee_per_gas, '0')", "x.gas_used")}::HUGEINT AS t, CAST(t AS VARCHAR) AS tip FROM ${rel("transactions")} x JOIN ${rel("blocks")} b ON b.number = x.block_number WHERE x.gas_used > 0)`,
			"t > 0",
		),
		row(
			"w.address",
			1,
			"CAST(CAST(w.amount AS HUGEINT) * 1000000000 AS VARCHAR)",
			`(SELECT number AS block_number, unnest(withdrawals) AS w FROM ${rel("blocks")} WHERE withdrawals IS NOT NULL)`,
			"w.amount <> '0'",
		),
		row("to_address", 1, "value", rel("traces"), "trace_type = 'reward' AND value IS NOT NULL AND value <> '0'"),
	].join(" UNION ALL ");
}

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
 * Per holding (address and HOLDING_KEYS): the net change over `moves` (movesSql, nativeMovesSql), as
 * limb sums (amounts.ts), with the first and last block that changed it and the moves counted.
 */
export function deltasSql(moves: string, kind: HoldingKind): string {
	const keys = ["address", ...HOLDING_KEYS[kind]].join(", ");
	return `SELECT ${keys}, ${signedLimbSumsSql("sign", "value", "BIGINT")}, min(block_number)::BIGINT AS first_block, max(block_number)::BIGINT AS last_block, count(*)::BIGINT AS transfers FROM (${moves}) GROUP BY ${keys}`;
}

/** How merged runs fold delta files `src`: the sums of each holding. */
export function mergeDeltasSql(src: string, kind: HoldingKind): string {
	const keys = ["address", ...HOLDING_KEYS[kind]].join(", ");
	return `SELECT ${keys}, ${LIMBS.map((l) => `sum(${l})::BIGINT AS ${l}`).join(", ")}, min(first_block)::BIGINT AS first_block, max(last_block)::BIGINT AS last_block, sum(transfers)::BIGINT AS transfers FROM ${src} GROUP BY ${keys}`;
}

/** The delta files' columns (for an empty relation where none is listed). */
export const deltaColumns = (kind: HoldingKind): Record<string, string> => ({
	address: "VARCHAR",
	...Object.fromEntries(HOLDING_KEYS[kind].map((k) => [k, "VARCHAR"])),
	...Object.fromEntries(LIMBS.map((l) => [l, "BIGINT"])),
	first_block: "BIGINT",
	last_block: "BIGINT",
	transfers: "BIGINT",
});
