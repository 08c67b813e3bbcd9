import { extractBlock } from "../extract/extract-block.js";
import { DATASETS, type DatasetRows } from "../extract/rows.js";
import { BlockUnavailableError, ethGetBlockHash, fetchBlockBundle, type NodeCapabilities } from "../rpc/actions.js";
import type { RpcClient } from "../rpc/client.js";
import type { TraceFormat } from "../rpc/types.js";
import { ConsistencyError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";

/** A block whose responses disagree (lagging replica, node mid-reorg) is fetched again this often. */
const BLOCK_ATTEMPTS = 6;
/** Rounds of re-fetching the parts of a range that do not chain, before it is taken for a reorg. */
const RANGE_ATTEMPTS = 6;
/** Answers, apart from the fetch itself, that must name a range's last hash before it is kept. */
const CONFIRMATIONS = 2;

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
 * batches), and checks that each range is one piece of the node's chain before returning it:
 * its blocks chain by parent hash, and its last block's hash is confirmed by further answers.
 * Blocks that fail either check are fetched again, so a block from another fork (a load-balanced
 * backend briefly on another branch) or a node switching branches mid-fetch never gets through.
 * Used by the backfill and the head follower alike.
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
				if (!(err instanceof ConsistencyError && err.retryable)) throw err;
				rpc.reportFault(err instanceof BlockUnavailableError ? "missing_block" : "inconsistent", err.message);
				if (attempt >= BLOCK_ATTEMPTS) throw err;
				logger.warn(`${err.message}; fetching block ${n} again (attempt ${attempt + 1} of ${BLOCK_ATTEMPTS})`);
				await new Promise((r) => setTimeout(r, 250 * attempt));
			}
		}
	}

	/**
	 * Whether further answers about block `n` agree that it is `hash`: each its own request (so,
	 * behind a load balancer, maybe another backend's), until CONFIRMATIONS name it. One naming
	 * another block refutes it. A null answer (a backend that lags) neither confirms nor refutes:
	 * after 2 × CONFIRMATIONS questions with nothing against it, the fetched block stands.
	 */
	async function confirmed(n: number, hash: string): Promise<boolean> {
		let agreeing = 0;
		for (let asked = 0; asked < 2 * CONFIRMATIONS && agreeing < CONFIRMATIONS; asked++) {
			const answer = await ethGetBlockHash(rpc, n);
			if (answer === null) rpc.reportFault("missing_block", `the node has no block ${n} (yet), fetched as ${hash}`);
			else if (answer !== hash) return false;
			else agreeing++;
		}
		return true;
	}

	async function fetchRange(from: number, to: number, traces: TraceFormat | null): Promise<FetchedRange> {
		const out: { link: Link; rows: DatasetRows }[] = new Array(to - from + 1);
		const fetchAll = async (indexes: number[]) => {
			let k = 0;
			const worker = async () => {
				while (k < indexes.length) {
					const i = indexes[k++] as number;
					out[i] = await fetchChecked(from + i, traces);
				}
			};
			await Promise.all(Array.from({ length: Math.min(concurrency, indexes.length) }, worker));
		};
		await fetchAll(Array.from(out.keys()));
		for (let round = 1; ; round++) {
			const stale = await unconfirmedParts(out.map((o) => o.link));
			if (!stale) break;
			rpc.reportFault("inconsistent", stale.problem);
			if (round >= RANGE_ATTEMPTS) {
				throw new ChainBreakError(`${stale.problem}: the node reorganized mid-fetch; fetch the range again`);
			}
			logger.warn(`${stale.problem}; fetching ${stale.indexes.length} of blocks ${from}..${to} again`);
			await new Promise((r) => setTimeout(r, 100 * round));
			await fetchAll(stale.indexes);
		}
		return { links: out.map((o) => o.link), rows: mergeRows(out.map((o) => o.rows)) };
	}

	/**
	 * The blocks of a range to fetch again, or null when the range is one piece of the node's
	 * chain. The range splits into runs of blocks that chain by parent hash (one run, normally;
	 * blocks fetched in parallel across a reorg, or a batch answered by a backend on another fork,
	 * make more). A run whose last hash further answers confirm is canonical all through, since
	 * each hash commits to its parent; a run that is not is fetched again. Only one run can be
	 * canonical, so a range of several is always fetched again in part.
	 */
	async function unconfirmedParts(links: Link[]): Promise<{ indexes: number[]; problem: string } | null> {
		const runs: [number, number][] = [];
		let start = 0;
		let problem = "";
		for (let i = 1; i <= links.length; i++) {
			const prev = links[i - 1] as Link;
			const cur = links[i];
			if (cur && cur.parentHash === prev.hash) continue;
			if (cur && !problem) {
				problem = `block ${cur.number}'s parent hash ${cur.parentHash} is not block ${prev.number}'s hash ${prev.hash}`;
			}
			runs.push([start, i - 1]);
			start = i;
		}
		const checks = await Promise.all(
			runs.map(([, b]) => {
				const last = links[b] as Link;
				return confirmed(last.number, last.hash);
			}),
		);
		const stale = runs.filter((_, k) => !checks[k]);
		// Several runs, all confirmed, cannot be: each would be canonical, yet they do not chain.
		if (stale.length === 0 && runs.length > 1) stale.push(...runs);
		if (stale.length === 0) return null;
		if (!problem) {
			const last = links.at(-1) as Link;
			problem = `block ${last.number} was fetched as ${last.hash}, other answers name another block`;
		}
		return { indexes: stale.flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, j) => a + j)), problem };
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
