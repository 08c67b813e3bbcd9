import type { FollowSource } from "../api/metrics.js";
import { createRpcClient } from "../rpc/client.js";
import type { TraceMode } from "../rpc/detect-traces.js";
import type { LakeSettings } from "../store/delta/lake-export.js";
import { parseChainId } from "../util/chain.js";
import { UserInputError } from "../util/errors.js";
import type { Logger } from "../util/logger.js";
import { createFollower } from "./follower.js";

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

/** Starts one follower per spec; returns their metrics sources and a stop function. */
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
		lake?: Partial<LakeSettings>;
	},
) {
	const sources = new Map<string, FollowSource>();
	const followers = specs.map((spec) => {
		const rpc = createRpcClient({ urls: spec.urls, logger: opts.logger });
		const follower = createFollower({ ...opts, rpc, chain: parseChainId(spec.chain) });
		sources.set(spec.chain, { stats: follower.stats, rpcErrors: rpc.errors });
		follower.start((e) => {
			if (e.type === "blocks") opts.logger.info(`${spec.chain}: stored blocks ${e.from}..${e.to}`);
			if (e.type === "compact") opts.logger.info(`${spec.chain}: compacted ${e.files} files into ${e.from}..${e.to}`);
		});
		return follower;
	});
	return {
		sources,
		followers,
		stop: () => Promise.all(followers.map((f) => f.stop())),
	};
}
