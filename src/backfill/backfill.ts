import type { TraceFormat } from "../extract/extract-block.js";
import { DATASETS, type DatasetName } from "../extract/rows.js";
import { ethBlockNumber, ethBlockNumberAtLeast, ethChainId } from "../rpc/actions.js";
import type { RpcClient } from "../rpc/client.js";
import { detectTraceFormat, type TraceMode } from "../rpc/detect-traces.js";
import { removeUnlisted, writeChunk } from "../store/chunk-store.js";
import { alignedChunks, chainDir } from "../store/layout.js";
import { acquireWriteLock } from "../store/lock.js";
import { loadManifest, type Manifest, missingRanges } from "../store/manifest.js";
import { createParquetWriter } from "../store/parquet-writer.js";
import type { ChainRef } from "../util/chain.js";
import { crashPoint } from "../util/crash-point.js";
import { ChainlakeError, UserInputError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";
import { createRangeFetcher, type Link } from "./fetch-range.js";
import { createProgress } from "./progress.js";

/** Blocks fetched at once; their requests share batches, so this bounds in-flight HTTP work. */
export const DEFAULT_CONCURRENCY = 8;
/** Blocks per Parquet file. 1,000 mainnet blocks hold ~150k transactions and ~500k logs:
 * files of tens of MB, and a chunk's rows fit comfortably in memory while it is written. */
export const DEFAULT_PARTITION_SIZE = 1_000;

export interface BackfillDeps {
	rpc: RpcClient;
	chain: ChainRef;
	dataDir: string;
	logger: Logger;
}

export interface BackfillRun {
	from: number;
	to: number | "latest";
	traces: TraceMode;
	partitionSize?: number;
	concurrency?: number;
}

export interface BackfillSummary {
	from: number;
	to: number;
	traceFormat: TraceFormat | null;
	blocks: number;
	chunks: number;
	rows: Record<DatasetName, number>;
	seconds: number;
}

export function createBackfill({ rpc, chain, dataDir, logger }: BackfillDeps) {
	/** Exports blocks [from, to] into Parquet, skipping ranges already written. */
	async function run(opts: BackfillRun): Promise<BackfillSummary> {
		const started = performance.now();
		if (opts.to !== "latest" && opts.from > opts.to) {
			throw new UserInputError(
				"INVALID_RANGE",
				`--from (${opts.from}) is after --to (${opts.to}): give --from <= --to`,
			);
		}
		const nodeChain = await ethChainId(rpc);
		if (nodeChain !== chain.number) {
			throw new UserInputError(
				"WRONG_CHAIN",
				`the node serves chain ${nodeChain} (eip155-${nodeChain}), not ${chain.id}: check --rpc, or pass --chain eip155-${nodeChain}`,
			);
		}
		// A lagging backend may report a head a few blocks short of an explicit --to: ask again first.
		const head = opts.to === "latest" ? await ethBlockNumber(rpc) : await ethBlockNumberAtLeast(rpc, opts.to);
		const to = opts.to === "latest" ? head : opts.to;
		if (to > head) {
			throw new UserInputError(
				"RANGE_PAST_HEAD",
				`--to ${to} is past the node's head (${head}): use --to latest or a lower number`,
			);
		}
		if (opts.from > to) throw new UserInputError("INVALID_RANGE", `--from (${opts.from}) is after the head (${to})`);

		const traceFormat = head === 0 ? null : await detectTraceFormat(rpc, opts.traces, Math.max(1, to), logger);
		const unlock = acquireWriteLock(chainDir(dataDir, chain.id));
		try {
			return await exportRange(opts, to, traceFormat, started);
		} finally {
			unlock();
		}
	}

	async function exportRange(
		opts: BackfillRun,
		to: number,
		traceFormat: TraceFormat | null,
		started: number,
	): Promise<BackfillSummary> {
		const manifest = await loadManifest(dataDir, chain.id, chain.number);
		const removed = await removeUnlisted(dataDir, manifest);
		if (removed.length > 0) logger.info(`removed ${removed.length} files of an interrupted run: ${removed.join(", ")}`);

		const partitionSize = opts.partitionSize ?? DEFAULT_PARTITION_SIZE;
		const chunks = missingRanges(manifest, opts.from, to).flatMap(([a, b]) => alignedChunks(a, b, partitionSize));
		const total = chunks.reduce((n, [a, b]) => n + b - a + 1, 0);
		logger.info(
			`${chain.id}: blocks ${opts.from}..${to}, ${total} to fetch in ${chunks.length} chunks, traces: ${traceFormat ?? "none"}`,
		);

		const rows = Object.fromEntries(DATASETS.map((d) => [d, 0])) as Record<DatasetName, number>;
		const progress = createProgress({ total, log: (l) => logger.info(l) });
		const writer = await createParquetWriter();
		const fetcher = createRangeFetcher({ rpc, logger, concurrency: opts.concurrency ?? DEFAULT_CONCURRENCY });
		try {
			// The next chunk is fetched while this one is written: the node's time and ours overlap.
			const fetchChunk = (i: number) => {
				const c = chunks[i];
				if (!c) return null;
				const p = fetcher.fetchRange(c[0], c[1], traceFormat);
				p.catch(() => {}); // awaited (and thrown) in its turn; not "unhandled" if we stop first
				return p;
			};
			let next = fetchChunk(0);
			for (const [i, [from, chunkTo]] of chunks.entries()) {
				const { links, rows: data } = await (next as NonNullable<typeof next>);
				next = fetchChunk(i + 1);
				crashPoint("backfill.chunk-fetched");
				checkChain(links, manifest, from, chunkTo);
				const first = links[0];
				const last = links[links.length - 1];
				const entry = await writeChunk(
					writer,
					dataDir,
					manifest,
					{
						from,
						to: chunkTo,
						traces: traceFormat,
						firstParentHash: first?.parentHash ?? "",
						lastHash: last?.hash ?? "",
					},
					data,
					links.map((l) => l.hash),
				);
				crashPoint("backfill.chunk-committed");
				let chunkRows = 0;
				for (const [d, n] of Object.entries(entry.rows)) {
					rows[d as DatasetName] += n;
					chunkRows += n;
				}
				progress.advance(chunkTo - from + 1, chunkRows);
			}
		} finally {
			progress.done();
			writer.close();
		}
		return {
			from: opts.from,
			to,
			traceFormat,
			blocks: total,
			chunks: chunks.length,
			rows,
			seconds: (performance.now() - started) / 1000,
		};
	}

	return { run };
}

/** Parent hashes must chain through the chunk and onto the chunks already stored around it. */
function checkChain(links: Link[], manifest: Manifest, from: number, to: number): void {
	const first = links[0];
	const last = links[links.length - 1];
	const before = manifest.chunks.find((c) => c.to === from - 1);
	const after = manifest.chunks.find((c) => c.from === to + 1);
	if (first && before && before.last_hash !== first.parentHash) {
		throw new ChainlakeError(
			"REORG_BELOW_STORED",
			`block ${from}'s parent ${first.parentHash} differs from stored block ${from - 1} (${before.last_hash}): the chain reorganized below the stored data`,
		);
	}
	if (last && after && after.first_parent_hash !== last.hash) {
		throw new ChainlakeError(
			"REORG_BELOW_STORED",
			`block ${to} (${last.hash}) is not the parent of stored block ${to + 1} (${after.first_parent_hash}): the chain reorganized`,
		);
	}
}
