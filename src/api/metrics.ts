import type { FollowerStats } from "../follow/follower.js";
import { type LakeExportStatus, lakeExportStatus } from "../store/manifest.js";

/** Latency buckets in seconds: a point lookup should land in the first few. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** What a follower exposes for /metrics and /readyz. */
export interface FollowSource {
	stats: FollowerStats;
	rpcErrors: Record<string, number>;
	/** The Delta Lake export's failures, where they are another process's (its status file). */
	deltaExport?: LakeExportStatus;
}

/** Request latency by route, and follower figures, in Prometheus text format. */
export function createMetrics() {
	const routes = new Map<string, { counts: number[]; sum: number; count: number }>();
	return {
		observe(route: string, seconds: number) {
			let h = routes.get(route);
			if (!h) {
				h = { counts: BUCKETS.map(() => 0), sum: 0, count: 0 };
				routes.set(route, h);
			}
			const counts = h.counts;
			BUCKETS.forEach((b, i) => {
				if (seconds <= b) counts[i] = (counts[i] ?? 0) + 1;
			});
			h.sum += seconds;
			h.count++;
		},
		render(
			followers: Map<string, FollowSource>,
			/** Stored heads; a null timestamp (a writer's own view, follow/status-server.ts) skips the lag in seconds. */
			heads: Map<string, { block: number; timestamp: number | null } | null>,
		): string {
			const out: string[] = [];
			const metric = (name: string, type: string, help: string) =>
				out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
			const label = (v: string) => v.replaceAll("\\", "\\\\").replaceAll('"', '\\"');
			metric("chainlake_head_block", "gauge", "Newest block stored, per chain.");
			for (const [chain, h] of heads) if (h) out.push(`chainlake_head_block{chain="${chain}"} ${h.block}`);
			metric("chainlake_lag_seconds", "gauge", "Seconds since the newest stored block's timestamp.");
			const now = Date.now() / 1000;
			for (const [chain, h] of heads)
				if (h?.timestamp != null)
					out.push(`chainlake_lag_seconds{chain="${chain}"} ${Math.max(0, now - h.timestamp).toFixed(0)}`);
			metric("chainlake_node_head_block", "gauge", "The node's head, as last polled by the follower.");
			metric("chainlake_lag_blocks", "gauge", "Blocks the node has that are not stored yet.");
			metric("chainlake_blocks_ingested_total", "counter", "Blocks appended by the follower.");
			metric("chainlake_reorgs_total", "counter", "Reorgs applied by the follower.");
			metric("chainlake_follow_faults_total", "counter", "Follower steps that failed or were refused (node faults).");
			metric(
				"chainlake_delta_export_failures_total",
				"counter",
				"Delta Lake log exports that failed (each retried at the next manifest save).",
			);
			metric("chainlake_rpc_requests_total", "counter", "RPC requests attempted (retries included).");
			metric("chainlake_rpc_errors_total", "counter", "Failed RPC attempts, and answers found wrong, by kind.");
			for (const [chain, f] of followers) {
				const s = f.stats;
				if (s.nodeHead != null) out.push(`chainlake_node_head_block{chain="${chain}"} ${s.nodeHead}`);
				if (s.nodeHead != null)
					out.push(`chainlake_lag_blocks{chain="${chain}"} ${Math.max(0, s.nodeHead - (s.storedHead ?? -1))}`);
				out.push(`chainlake_blocks_ingested_total{chain="${chain}"} ${s.blocksIngested}`);
				out.push(`chainlake_reorgs_total{chain="${chain}"} ${s.reorgs}`);
				out.push(`chainlake_follow_faults_total{chain="${chain}"} ${s.faults}`);
				out.push(
					`chainlake_delta_export_failures_total{chain="${chain}"} ${(f.deltaExport ?? lakeExportStatus(chain))?.failures ?? 0}`,
				);
				out.push(`chainlake_rpc_requests_total{chain="${chain}"} ${s.node.attempts}`);
				for (const [kind, n] of Object.entries(f.rpcErrors))
					out.push(`chainlake_rpc_errors_total{chain="${chain}",kind="${label(kind)}"} ${n}`);
			}
			metric("chainlake_http_request_duration_seconds", "histogram", "API request latency by route.");
			for (const [route, h] of routes) {
				const r = label(route);
				BUCKETS.forEach((b, i) => {
					out.push(`chainlake_http_request_duration_seconds_bucket{route="${r}",le="${b}"} ${h.counts[i]}`);
				});
				out.push(`chainlake_http_request_duration_seconds_bucket{route="${r}",le="+Inf"} ${h.count}`);
				out.push(`chainlake_http_request_duration_seconds_sum{route="${r}"} ${h.sum.toFixed(6)}`);
				out.push(`chainlake_http_request_duration_seconds_count{route="${r}"} ${h.count}`);
			}
			return `${out.join("\n")}\n`;
		},
	};
}

export type Metrics = ReturnType<typeof createMetrics>;
