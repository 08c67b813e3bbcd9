import { DATASETS, type DatasetName } from "../extract/rows.js";
import { ethBlockNumber, ethBlockNumberAtLeast, ethChainId } from "../rpc/actions.js";
import type { RpcClient } from "../rpc/client.js";
import { detectTraceFormat, type TraceMode } from "../rpc/detect-traces.js";
import { metadataSource } from "../rpc/token-reads.js";
import type { TraceFormat } from "../rpc/types.js";
import { writeChunk } from "../store/chunks/chunk-store.js";
import { mergeAll } from "../store/chunks/merges.js";
import { applyLakeFlags } from "../store/delta/lake-flags.js";
import { saveManifest } from "../store/delta/save-manifest.js";
import { acquireWriteLock } from "../store/files/lock.js";
import { createParquetWriter } from "../store/files/parquet-writer.js";
import { alignedChunks, chainDir } from "../store/format/layout.js";
import { loadManifest, missingRanges } from "../store/format/manifest.js";
import type { LakeSettings, Manifest } from "../store/format/records.js";
import { ranksStep } from "../store/holdings/holder-ranks.js";
import { DamagedFileError, damageBehind } from "../store/repair/damage.js";
import { damagedChunks } from "../store/repair/repair.js";
import { removeUnlisted } from "../store/retire/remove-unlisted.js";
import { createRetireLater } from "../store/retire/retire-later.js";
import type { ChainRef } from "../util/chain.js";
import { crashPoint } from "../util/crash-point.js";
import { diskFullError, isDiskFull } from "../util/disk-full.js";
import { ChainlakeError, UserInputError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";
import { createRangeFetcher, type Link } from "./fetch-range.js";
import { createMergeGuard } from "./merge-guard.js";
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
	/** Rows from which settled chunks are no longer merged (chunk-merges.ts); kept in the manifest. */
	compactRows?: number;
	/** The Delta Lake export's settings (delta/lake-flags.ts); kept in the manifest. */
	lake?: Partial<LakeSettings>;
	concurrency?: number;
	/**
	 * Stops the run (SIGTERM/SIGINT in the CLI): at once while it waits for the node, else once the
	 * chunk being written is committed. It then fails with InterruptedError, lock released, nothing
	 * unlisted left behind; the same run again resumes.
	 */
	signal?: AbortSignal;
}

/** The run was stopped through `BackfillRun.signal`; `reason` is the signal's reason (e.g. "SIGTERM"). */
export class InterruptedError extends ChainlakeError {
	constructor(readonly reason: unknown) {
		super(
			"INTERRUPTED",
			`stopped${typeof reason === "string" ? ` by ${reason}` : ""}: the chunks committed so far are kept; run the same command again to resume`,
		);
		this.name = "InterruptedError";
	}
}

/** `p`, or an InterruptedError as soon as `signal` aborts (for waits on the node only: what `p`
 * was doing goes on unobserved, so it must write nothing). */
function unlessAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
	if (!signal) return p;
	return new Promise<T>((resolve, reject) => {
		const abort = () => reject(new InterruptedError(signal.reason));
		if (signal.aborted) return abort();
		signal.addEventListener("abort", abort, { once: true });
		p.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
	});
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
	const metadata = metadataSource(rpc);
	/** Exports blocks [from, to] into Parquet, skipping ranges already written. */
	async function run(opts: BackfillRun): Promise<BackfillSummary> {
		const started = performance.now();
		if (opts.to !== "latest" && opts.from > opts.to) {
			throw new UserInputError(
				"INVALID_RANGE",
				`--from (${opts.from}) is after --to (${opts.to}): give --from <= --to`,
			);
		}
		const nodeChain = await unlessAborted(ethChainId(rpc), opts.signal);
		if (nodeChain !== chain.number) {
			throw new UserInputError(
				"WRONG_CHAIN",
				`the node serves chain ${nodeChain} (eip155-${nodeChain}), not ${chain.id}: check --rpc, or pass --chain eip155-${nodeChain}`,
			);
		}
		// A lagging backend may report a head a few blocks short of an explicit --to: ask again first.
		const head = await unlessAborted(
			opts.to === "latest" ? ethBlockNumber(rpc) : ethBlockNumberAtLeast(rpc, opts.to),
			opts.signal,
		);
		const to = opts.to === "latest" ? head : opts.to;
		if (to > head) {
			throw new UserInputError(
				"RANGE_PAST_HEAD",
				`--to ${to} is past the node's head (${head}): use --to latest or a lower number`,
			);
		}
		if (opts.from > to) throw new UserInputError("INVALID_RANGE", `--from (${opts.from}) is after the head (${to})`);

		const traceFormat =
			head === 0
				? null
				: await unlessAborted(detectTraceFormat(rpc, opts.traces, Math.max(1, to), logger), opts.signal);
		const unlock = await acquireWriteLock(chainDir(dataDir, chain.id));
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
		if (applyLakeFlags(manifest, opts.lake ?? {})) await saveManifest(dataDir, manifest);
		const removed = await removeUnlisted(dataDir, manifest);
		if (removed.length > 0) logger.info(`removed ${removed.length} files of an interrupted run: ${removed.join(", ")}`);

		const partitionSize = opts.partitionSize ?? DEFAULT_PARTITION_SIZE;
		// Which chunks are settled, so their index files can be merged into runs (runs.ts).
		manifest.partition_size ??= partitionSize;
		if (opts.compactRows !== undefined) manifest.compact_rows = opts.compactRows;
		const retired = createRetireLater(chainDir(dataDir, chain.id));
		// Damaged listed files of the range (missing, cut short): their chunks are fetched again, as
		// they were, before any other: until their replacements are listed, no merge runs (a merge
		// would read the damaged files it is about to replace).
		const damaged = await damagedChunks(dataDir, manifest, (r) => r.to >= opts.from && r.from <= to, logger);
		const chunks = [
			...damaged.map((c): [number, number] => [c.from, c.to]).sort((a, b) => a[0] - b[0]),
			...missingRanges(manifest, opts.from, to).flatMap(([a, b]) => alignedChunks(a, b, partitionSize)),
		];
		const repaired = () => damaged.every((c) => !manifest.chunks.includes(c));
		// Merges that meet a damaged file outside the range stop for this run (merge-guard.ts).
		const guard = createMergeGuard(dataDir, () => manifest, logger);
		const merge = () =>
			guard.run(() =>
				mergeAll(
					writer,
					dataDir,
					manifest,
					(files) => retired.retire(files),
					() => opts.signal?.aborted === true,
					metadata,
				),
			);
		const total = chunks.reduce((n, [a, b]) => n + b - a + 1, 0);
		logger.info(
			`${chain.id}: blocks ${opts.from}..${to}, ${total} to fetch in ${chunks.length} chunks, traces: ${traceFormat ?? "none"}`,
		);

		const rows = Object.fromEntries(DATASETS.map((d) => [d, 0])) as Record<DatasetName, number>;
		const progress = createProgress({ total, log: (l) => logger.info(l) });
		const writer = await createParquetWriter();
		const fetcher = createRangeFetcher({ rpc, logger, concurrency: opts.concurrency ?? DEFAULT_CONCURRENCY });
		let failed = false;
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
			// Merges a stopped run left due (it stopped between a chunk and its merges) come first,
			// so the saves, and the generations files are named after, follow an unstopped run's.
			// (A run with nothing to fetch changes nothing: merges wait for the next writer.)
			if (chunks.length > 0 && repaired()) await merge();
			for (const [i, [from, chunkTo]] of chunks.entries()) {
				const { links, rows: data } = await unlessAborted(next as NonNullable<typeof next>, opts.signal);
				if (opts.signal?.aborted) throw new InterruptedError(opts.signal.reason);
				next = fetchChunk(i + 1);
				crashPoint("backfill.chunk-fetched");
				// A damaged chunk leaves the manifest in the save that lists its replacement.
				const replaced = damaged.find((c) => c.from === from);
				if (replaced) manifest.chunks = manifest.chunks.filter((c) => c !== replaced);
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
				// Index files of settled chunks into runs, while the next chunk is fetched.
				if (repaired()) await merge();
				await retired.sweep();
				let chunkRows = 0;
				for (const [d, n] of Object.entries(entry.rows)) {
					rows[d as DatasetName] += n;
					chunkRows += n;
				}
				progress.advance(chunkTo - from + 1, chunkRows);
			}
			// The holder ranks once a run has written its chunks, not per chunk (store/holdings/holder-ranks.ts).
			if (chunks.length > 0 && !opts.signal?.aborted) {
				const gone = await guard.run(() => ranksStep(writer, dataDir, manifest));
				if (gone) retired.retire(gone);
			}
		} catch (err) {
			failed = true;
			if (isDiskFull(err)) throw await diskFullError(chainDir(dataDir, chain.id), err);
			// A read of a damaged listed file: named with its repair, not in DuckDB's words.
			const damage = await damageBehind(dataDir, manifest, err);
			throw damage ? new DamagedFileError(damage) : err;
		} finally {
			progress.done();
			writer.close();
			// Stopped or failed: what the chunk in progress had written is not listed; remove it now
			// (the staging folder too) rather than at the next start, which frees a full disk at once.
			if (failed) await removeLeftovers();
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

	async function removeLeftovers(): Promise<void> {
		try {
			const removed = await removeUnlisted(dataDir, await loadManifest(dataDir, chain.id, chain.number));
			if (removed.length > 0) logger.info(`removed ${removed.length} unlisted files of the chunk in progress`);
		} catch (err) {
			logger.warn(`could not remove the unlisted files of the chunk in progress: ${(err as Error).message}`);
		}
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
