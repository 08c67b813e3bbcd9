import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { FollowSource } from "../follow/follower-stats.js";
import { lakeExportStatus } from "../store/delta/save-manifest.js";

/** Latency buckets in seconds: a point lookup should land in the first few. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

type Heads = Map<string, { block: number; timestamp: number | null } | null>;

/**
 * The service's Prometheus metrics (prom-client): Node's runtime figures (event-loop lag, heap,
 * GC pauses, RSS, CPU, open handles: prom-client's default metrics), request latency by route,
 * and each chain's head and follower figures, read at every scrape from what `render` is given.
 * One registry per app, so several apps in one process (tests) each report their own.
 */
/**
 * `dataDir`: the folder whose followers are reported (their Delta Lake export's status is kept by
 * folder); `streamsOpen`: the API's open streams (api/live/streams.ts), for its gauge.
 */
export function createMetrics(opts: { dataDir: string; streamsOpen?: () => number }) {
	const registry = new Registry();
	collectDefaultMetrics({ register: registry });
	let followers = new Map<string, FollowSource>();
	let heads: Heads = new Map();
	const latency = new Histogram({
		name: "chainlake_http_request_duration_seconds",
		help: "API request latency by route.",
		labelNames: ["route"],
		buckets: BUCKETS,
		registers: [registry],
	});
	/** A gauge or counter whose values are read off the scrape's followers and heads. */
	const figure = (
		type: "gauge" | "counter",
		name: string,
		help: string,
		values: () => [Record<string, string>, number][],
		labelNames = ["chain"],
	) => {
		const Kind = type === "gauge" ? Gauge : Counter;
		new Kind({
			name,
			help,
			labelNames,
			registers: [registry],
			collect(this: Gauge | Counter) {
				this.reset();
				// A counter's value here is the follower's own running total.
				for (const [labels, v] of values()) (this as Gauge).inc(labels, v);
			},
		});
	};
	const perFollower = (f: (s: FollowSource, chain: string) => number | null) => () =>
		[...followers].flatMap(([chain, source]): [Record<string, string>, number][] => {
			const v = f(source, chain);
			return v == null ? [] : [[{ chain }, v]];
		});
	figure("gauge", "chainlake_head_block", "Newest block stored, per chain.", () =>
		[...heads].flatMap(([chain, h]): [Record<string, string>, number][] => (h ? [[{ chain }, h.block]] : [])),
	);
	figure("gauge", "chainlake_lag_seconds", "Seconds since the newest stored block's timestamp.", () =>
		[...heads].flatMap(([chain, h]): [Record<string, string>, number][] =>
			h?.timestamp != null ? [[{ chain }, Math.max(0, Math.round(Date.now() / 1000 - h.timestamp))]] : [],
		),
	);
	figure(
		"gauge",
		"chainlake_node_head_block",
		"The node's head, as last polled by the follower.",
		perFollower((f) => f.stats.nodeHead ?? null),
	);
	figure(
		"gauge",
		"chainlake_lag_blocks",
		"Blocks the node has that are not stored yet.",
		perFollower((f) => (f.stats.nodeHead == null ? null : Math.max(0, f.stats.nodeHead - (f.stats.storedHead ?? -1)))),
	);
	figure(
		"counter",
		"chainlake_blocks_ingested_total",
		"Blocks appended by the follower.",
		perFollower((f) => f.stats.blocksIngested),
	);
	figure(
		"counter",
		"chainlake_reorgs_total",
		"Reorgs applied by the follower.",
		perFollower((f) => f.stats.reorgs),
	);
	figure(
		"counter",
		"chainlake_follow_faults_total",
		"Follower steps that failed or were refused (node faults).",
		perFollower((f) => f.stats.faults),
	);
	figure(
		"counter",
		"chainlake_delta_export_failures_total",
		"Delta Lake log exports that failed (each retried at the next manifest save).",
		perFollower((f, chain) => (f.deltaExport ?? lakeExportStatus(opts.dataDir, chain))?.failures ?? 0),
	);
	figure(
		"counter",
		"chainlake_rpc_requests_total",
		"RPC requests attempted (retries included).",
		perFollower((f) => f.stats.node.attempts),
	);
	figure(
		"counter",
		"chainlake_rpc_errors_total",
		"Failed RPC attempts, and answers found wrong, by kind.",
		() =>
			[...followers].flatMap(([chain, f]) =>
				Object.entries(f.rpcErrors).map(([kind, n]): [Record<string, string>, number] => [{ chain, kind }, n]),
			),
		["chain", "kind"],
	);
	if (opts.streamsOpen) {
		const open = opts.streamsOpen;
		figure(
			"gauge",
			"chainlake_streams_open",
			"Streams (Server-Sent Events) open in this process.",
			() => [[{}, open()]],
			[],
		);
	}
	return {
		observe(route: string, seconds: number) {
			latency.observe({ route }, seconds);
		},
		/** The Prometheus text of everything, with these followers and stored heads (a null
		 * timestamp, a writer's own view in api/status-server.ts, skips the lag in seconds). */
		async render(source: Map<string, FollowSource>, stored: Heads): Promise<string> {
			followers = source;
			heads = stored;
			return registry.metrics();
		},
		contentType: registry.contentType,
	};
}

export type Metrics = ReturnType<typeof createMetrics>;
