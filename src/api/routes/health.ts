import type { FastifyInstance, FastifyRequest } from "fastify";
import type { FollowSource } from "../../follow/follower-stats.js";
import { readStatus, staleAfterMs } from "../../follow/status-file.js";
import { latestBlock } from "../../query/blocks.js";
import { nodeStatus } from "../../rpc/rpc-health.js";
import { lakeExportStatus } from "../../store/delta/save-manifest.js";
import { readManifestSafe } from "../../store/format/manifest.js";
import { authenticate } from "../auth.js";
import type { ApiContext } from "../context.js";
import { ApiError, errorBody } from "../errors.js";

/** Stored head per chain: block number and timestamp, or null when nothing is stored. */
async function storedHeads(ctx: ApiContext) {
	const heads = new Map<string, { block: number; timestamp: number } | null>();
	for (const chain of ctx.store.chains()) {
		try {
			// The head from the manifest, its block memoised like /blocks/latest: readiness probes are frequent.
			const row = await latestBlock(ctx.store.snapshot(chain));
			heads.set(chain, row ? { block: Number(row.number), timestamp: Number(row.timestamp) } : null);
		} catch {
			heads.set(chain, null);
		}
	}
	return heads;
}

/**
 * The chain's writer as this process knows it: its own follower while that writes; otherwise the
 * writer's status file (another process's follower: `npm run follow`, or the `serve --follow`
 * that holds the lock while this one stands by); a standby follower of its own if there is no
 * status file yet; or none.
 */
function writerOf(ctx: ApiContext, dataDir: string, chain: string) {
	const own = ctx.followers.get(chain);
	if (own && !own.stats.standby) return { source: own, status: null };
	const status = readStatus(dataDir, chain);
	if (status) return { source: status.source, status };
	return own ? { source: own, status: null } : null;
}

/** Liveness and readiness, no key needed (for load balancers, orchestrators); metrics, with a key unless public. */
export function healthRoutes(app: FastifyInstance, ctx: ApiContext, dataDir: string) {
	const deltaExport = (chain: string, f: FollowSource) => {
		const s = f.deltaExport ?? lakeExportStatus(dataDir, chain);
		return s
			? {
					failures: s.failures,
					problem: s.problem && { at: new Date(s.problem.at).toISOString(), message: s.problem.message },
				}
			: null;
	};

	app.get("/healthz", { schema: { summary: "Process is up", tags: ["health"] } }, async () => ({ status: "ok" }));

	app.get(
		"/readyz",
		{ schema: { summary: "Per chain: data present, head block, lag, follower state", tags: ["health"] } },
		async (_req, reply) => {
			const heads = await storedHeads(ctx);
			// Listed files found missing or damaged (checked once per file, and when a query fails on one).
			const damage = new Map(
				await Promise.all([...heads.keys()].map(async (c) => [c, await ctx.store.damage(c)] as const)),
			);
			const chains = [...heads].map(([chain, head]) => {
				const manifest = readManifestSafe(dataDir, chain);
				const own = ctx.followers.get(chain);
				const writer = writerOf(ctx, dataDir, chain);
				const f = writer?.source;
				const status = writer?.status;
				return {
					chain,
					// Ready when it can serve the chain: a process that writes it once its first step is
					// done; one that only reads (or stands by) once there is data, whatever the writer does.
					ready: head != null && (own === undefined || own.stats.standby != null || own.stats.lastStepAt != null),
					head_block: head?.block ?? null,
					head_lag_seconds: head ? Math.max(0, Math.round(Date.now() / 1000 - head.timestamp)) : null,
					ranges: manifest?.chunks.length ?? 0,
					traces_unavailable_ranges: manifest?.chunks.filter((c) => c.traces === "none").length ?? 0,
					// What is wrong with the manifest (nothing of the chain is served then), and the listed
					// files that are missing or damaged (named relative to the data folder, with their blocks):
					// requests reading them answer 503 DATA_DAMAGED; `npm run verify` says how to repair.
					manifest_damaged: ctx.store.manifestProblem(chain),
					damaged_files: damage.get(chain) ?? [],
					follower: f
						? {
								// Who writes the chain: this process, or another one whose status file this is.
								writer: own && !own.stats.standby ? "this process" : "another process",
								// This process follows too, and takes over when the writer's lock is free.
								standby: own?.stats.standby != null,
								...(status && {
									status_file: {
										pid: status.pid,
										host: status.host,
										written_at: new Date(status.written_at).toISOString(),
										// Much older than the writer's poll interval: it is stuck or gone.
										stale: status.stopped || Date.now() - status.written_at > staleAfterMs(status),
										stopped: status.stopped,
									},
								}),
								node_head_block: f.stats.nodeHead,
								lag_blocks: f.stats.nodeHead == null ? null : Math.max(0, f.stats.nodeHead - (head?.block ?? -1)),
								blocks_ingested: f.stats.blocksIngested,
								reorgs: f.stats.reorgs,
								faults: f.stats.faults,
								rpc_errors: f.rpcErrors,
								last_step_at: f.stats.lastStepAt ? new Date(f.stats.lastStepAt).toISOString() : null,
								// The Delta Lake logs this writer keeps (store/delta/): a failed export is retried at
								// the next save, and the files the logs list stay on disk meanwhile.
								delta_export: deltaExport(chain, f),
								last_fault: f.stats.lastFault && {
									at: new Date(f.stats.lastFault.at).toISOString(),
									message: f.stats.lastFault.message,
								},
								// Faults retried within a step (errors, timeouts, null or contradictory answers) leave
								// the data right but say the node is unwell: "degraded" while any happened lately.
								node: {
									...nodeStatus(f.stats.node),
									last_error: f.stats.node.lastError && {
										...f.stats.node.lastError,
										at: new Date(f.stats.node.lastError.at).toISOString(),
									},
								},
							}
						: null,
				};
			});
			// A damaged key file refuses every data request (503 KEYS_UNAVAILABLE): not ready, with that error.
			const keys = ctx.keyring.unavailable();
			const ready = keys === null && chains.length > 0 && chains.every((c) => c.ready);
			// A reader over a bucket: where its lake is, when its manifests were last fetched, its cache.
			const lake = ctx.remote ? { lake: ctx.remote.status() } : {};
			if (keys !== null)
				return reply.code(503).send({ ...errorBody(503, "KEYS_UNAVAILABLE", keys), ready, chains, ...lake });
			return reply.code(ready ? 200 : 503).send({ ready, chains, ...lake });
		},
	);

	/** Each served chain's writer, for /metrics: the same figures whichever process writes. */
	const writers = () => {
		const out = new Map<string, FollowSource>();
		for (const chain of new Set([...ctx.store.chains(), ...ctx.followers.keys()])) {
			const w = writerOf(ctx, dataDir, chain);
			if (w) out.set(chain, w.source);
		}
		return out;
	};

	// The figures are the operator's (routes and load, heads, node errors): on the public API they
	// need a key, like the data (issue 27); Prometheus sends one, or scrapes the writer's status port
	// (status-server.ts, no key), or the server runs with --metrics-public on a port only it reaches.
	// Not rate limited: a scrape every few seconds must not eat the key's budget.
	const metricsKey = async (req: FastifyRequest) => {
		if (ctx.metricsPublic) return;
		try {
			req.caller = authenticate(ctx.keyring, req.headers.authorization);
		} catch (err) {
			if (err instanceof ApiError && err.code === "MISSING_API_KEY")
				throw new ApiError(
					401,
					"MISSING_API_KEY",
					"/metrics needs an API key here: send Authorization: Bearer <key> (Prometheus: authorization.credentials), scrape the writer's --status-port (no key), or start the server with --metrics-public",
				);
			throw err;
		}
	};
	app.get(
		"/metrics",
		{
			schema: {
				summary: "Prometheus metrics",
				description:
					"Prometheus text: request latency by route, the runtime's figures, each chain's head, lag, reorgs and node errors. Needs an API key unless the server runs with --metrics-public; the writer's --status-port serves it without one.",
				tags: ["health"],
			},
			onRequest: metricsKey,
		},
		async (_req, reply) =>
			reply.type(ctx.metrics.contentType).send(await ctx.metrics.render(writers(), await storedHeads(ctx))),
	);
}
