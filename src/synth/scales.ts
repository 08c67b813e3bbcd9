/**
 * Dataset sizes for `npm run synth`. Totals follow the issue (L ≈ 1M blocks, 20M transactions,
 * 100M transfers, 60M logs); S and M are the same chain cut to 1/100 and 1/10 of the blocks.
 *
 * Activity per block grows over the chain's history the way mainnet's did: block b of B carries
 * about 150 · ((b+1)/B)^6.5 transactions, so the newest blocks hold ~150 (as mainnet blocks do
 * today) and the average is 150 / 7.5 = 20, which gives the 20 transactions a block
 * over the whole history. Per transaction: 3 logs on average (85% of them token transfers) and
 * 2.4 native transfers (the value of 40% of transactions, plus internal calls), so ≈ 5 transfers.
 */
export interface Scale {
	blocks: number;
	/** Externally owned accounts; picked log-uniformly, so a few see millions of transfers. */
	accounts: number;
	/** Token and router contracts, also log-uniform (a USDT-like token dominates). */
	contracts: number;
	/** Factories that deploy contracts; the busiest deploys thousands. */
	factories: number;
	/** Default blocks per file: the backfill's --partition-size. */
	partitionSize: number;
}

export const SCALES = {
	S: { blocks: 10_000, accounts: 100_000, contracts: 2_000, factories: 50, partitionSize: 2_000 },
	M: { blocks: 100_000, accounts: 1_000_000, contracts: 10_000, factories: 100, partitionSize: 10_000 },
	L: { blocks: 1_000_000, accounts: 10_000_000, contracts: 50_000, factories: 200, partitionSize: 10_000 },
} as const satisfies Record<string, Scale>;

export type ScaleName = keyof typeof SCALES;

/** Peak transactions a block, reached at the chain's head. */
export const PEAK_TXS_PER_BLOCK = 150;
/** Exponent of the activity ramp (mean = peak / (exponent + 1) = 20). */
export const RAMP_EXPONENT = 6.5;
/** First block's timestamp; blocks are 12 seconds apart. */
export const GENESIS_TIMESTAMP = 1_600_000_000;
export const BLOCK_SECONDS = 12;
