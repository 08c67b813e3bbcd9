import { extractBlock, type TraceFormat } from "../extract/extract-block.js";
import { DATASETS, type DatasetRows } from "../extract/rows.js";
import { fetchBlockBundle, type NodeCapabilities } from "../rpc/actions.js";
import type { RpcClient } from "../rpc/client.js";
import { ConsistencyError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";

/** A block whose responses disagree (node mid-reorg, lagging replica) is fetched again this often. */
const BLOCK_ATTEMPTS = 4;

/** A fetched range whose blocks do not chain: the node switched branches while it was fetched. */
export class ChainBreakError extends ConsistencyError {}

/** What chain checks need of a block; the raw responses are dropped once decoded. */
export interface Link {
	number: number;
	hash: string;
	parentHash: string;
}

export interface FetchedRange {
	/** In block order. */
	links: Link[];
	rows: DatasetRows;
}

/**
 * Fetches and decodes block ranges, `concurrency` blocks at a time (their requests share
 * batches), and checks that each range's blocks chain by parent hash. Used by the backfill and
 * the head follower alike.
 */
export function createRangeFetcher({
	rpc,
	logger,
	concurrency,
}: {
	rpc: RpcClient;
	logger: Logger;
	concurrency: number;
}) {
	const caps: NodeCapabilities = { blockReceipts: true };

	/** Fetches a block until its responses agree with each other (extractBlock checks them). */
	async function fetchChecked(n: number, traces: TraceFormat | null): Promise<{ link: Link; rows: DatasetRows }> {
		for (let attempt = 1; ; attempt++) {
			try {
				const bundle = await fetchBlockBundle(rpc, n, traces, caps);
				const rows = extractBlock(bundle);
				const link = {
					number: n,
					hash: bundle.block.hash.toLowerCase(),
					parentHash: bundle.block.parentHash.toLowerCase(),
				};
				return { link, rows };
			} catch (err) {
				if (!(err instanceof ConsistencyError && err.retryable) || attempt >= BLOCK_ATTEMPTS) throw err;
				logger.warn(`${err.message}; fetching block ${n} again (attempt ${attempt + 1} of ${BLOCK_ATTEMPTS})`);
				await new Promise((r) => setTimeout(r, 250 * attempt));
			}
		}
	}

	async function fetchRange(from: number, to: number, traces: TraceFormat | null): Promise<FetchedRange> {
		const out: { link: Link; rows: DatasetRows }[] = new Array(to - from + 1);
		let next = from;
		const worker = async () => {
			while (next <= to) {
				const n = next++;
				out[n - from] = await fetchChecked(n, traces);
			}
		};
		await Promise.all(Array.from({ length: Math.min(concurrency, to - from + 1) }, worker));
		const links = out.map((o) => o.link);
		// Blocks fetched in parallel must still form one chain: a reorg mid-fetch mixes branches.
		for (let i = 1; i < links.length; i++) {
			const prev = links[i - 1] as Link;
			const cur = links[i] as Link;
			if (cur.parentHash !== prev.hash) {
				throw new ChainBreakError(
					`block ${cur.number}'s parent hash ${cur.parentHash} is not block ${prev.number}'s hash ${prev.hash}: the node reorganized mid-fetch; fetch the range again`,
				);
			}
		}
		return { links, rows: mergeRows(out.map((o) => o.rows)) };
	}

	return { fetchRange };
}

function mergeRows(parts: DatasetRows[]): DatasetRows {
	const out = Object.fromEntries(DATASETS.map((d) => [d, [] as unknown[]])) as unknown as DatasetRows;
	for (const p of parts) {
		for (const d of DATASETS) {
			const target = out[d] as unknown[];
			// A loop, not push(...rows): a block with 100k+ trace frames overflows the argument stack.
			for (const row of p[d]) target.push(row);
		}
	}
	return out;
}
