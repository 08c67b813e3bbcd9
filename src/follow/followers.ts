import { ethChainId } from "../rpc/actions.js";
import { createRpcClient } from "../rpc/client.js";
import type { TraceMode } from "../rpc/detect-traces.js";
import type { LakeSettings } from "../store/format/records.js";
import { parseChainId } from "../util/chain.js";
import { UserInputError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";
import { createFollower } from "./follower.js";
import type { FollowSource } from "./follower-stats.js";
import { wrongChainError } from "./wrong-chain-error.js";

export interface FollowSpec {
	chain: string;
	urls: string[];
}

/** Parses `eip155-1=http://node:8545` (several URLs comma-separated). */
export function parseFollowSpec(spec: string): FollowSpec {
	const [chain, urls] = spec.split("=", 2);
	if (!chain || !urls) {
		throw new UserInputError(
			"INVALID_ARGS",
			`--follow ${JSON.stringify(spec)} must be <chain>=<rpc url>, e.g. eip155-1=http://127.0.0.1:8545`,
		);
	}
	parseChainId(chain);
	return { chain, urls: urls.split(",").filter(Boolean) };
}

/**
 * Asks each spec's node for its chain id, as the backfill does: a node of another chain is refused
 * (WRONG_CHAIN, one line: the chain the node serves and the --follow to use) before anything is
 * written, so a mistyped spec never stores one chain's blocks under another's name.
 */
export async function checkFollowChains(specs: FollowSpec[], logger: Logger): Promise<void> {
	for (const spec of specs) {
		const chain = parseChainId(spec.chain);
		const rpc = createRpcClient({ urls: spec.urls, logger });
		const served = await ethChainId(rpc);
		if (served !== chain.number) throw wrongChainError(spec.chain, served, spec.urls.join(","));
	}
}

/**
 * Starts one follower per spec; returns their metrics sources and a stop function.
 * Each stored range and compaction is logged as it happens, or, with `summaryMs`, at debug level
 * with one info line per chain every `summaryMs` saying what the interval brought (a demo's
 * terminal keeps its banner in view).
 */
export function startFollowers(
	specs: FollowSpec[],
	opts: {
		dataDir: string;
		logger: Logger;
		finalityDepth?: number;
		pollMs?: number;
		traces?: TraceMode;
		partitionSize?: number;
		startBlock?: number;
		deleteGraceMs?: number;
		compactFanIn?: number;
		lake?: Partial<LakeSettings>;
		summaryMs?: number;
	},
) {
	const sources = new Map<string, FollowSource>();
	const timers: NodeJS.Timeout[] = [];
	const followers = specs.map((spec) => {
		const rpc = createRpcClient({ urls: spec.urls, logger: opts.logger });
		const follower = createFollower({ ...opts, rpc, chain: parseChainId(spec.chain) });
		sources.set(spec.chain, { stats: follower.stats, rpcErrors: rpc.errors });
		const tally = { blocks: 0, compactions: 0, files: 0, reorgs: 0 };
		const say = opts.summaryMs ? opts.logger.debug : opts.logger.info;
		follower.start((e) => {
			if (e.type === "blocks") {
				tally.blocks += e.to - e.from + 1;
				say(`${spec.chain}: stored blocks ${e.from}..${e.to}`);
			}
			if (e.type === "compact") {
				tally.compactions++;
				tally.files += e.files;
				say(`${spec.chain}: compacted ${e.files} files into ${e.from}..${e.to}`);
			}
			if (e.type === "reorg") tally.reorgs++;
		});
		if (opts.summaryMs) {
			const every = opts.summaryMs;
			const t = setInterval(() => {
				const { storedHead, nodeHead } = follower.stats;
				opts.logger.info(
					`${spec.chain}: ${tally.blocks} blocks stored in the last ${Math.round(every / 1000)} s, through block ${storedHead ?? "-"} (node head ${nodeHead ?? "-"})${tally.compactions ? `; ${tally.compactions} compactions of ${tally.files} files` : ""}${tally.reorgs ? `; ${tally.reorgs} reorgs` : ""}`,
				);
				Object.assign(tally, { blocks: 0, compactions: 0, files: 0, reorgs: 0 });
			}, every);
			t.unref();
			timers.push(t);
		}
		return follower;
	});
	return {
		sources,
		followers,
		stop: () => {
			for (const t of timers) clearInterval(t);
			return Promise.all(followers.map((f) => f.stop()));
		},
	};
}
