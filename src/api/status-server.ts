import Fastify, { type FastifyInstance } from "fastify";
import type { FollowSource } from "../follow/follower-stats.js";
import { nodeStatus } from "../rpc/rpc-health.js";
import { createMetrics } from "./metrics.js";

/**
 * `npm run follow -- --status-port <n>`: the writer's own health over HTTP, for operators and
 * orchestrators (the API processes show the same through the status file): /healthz, /readyz
 * (200 once every chain's follower has stepped and holds its lock) and /metrics (the follower
 * figures of the API's /metrics, under the same names).
 */
export async function startStatusServer(
	sources: Map<string, FollowSource>,
	dataDir: string,
	port: number,
	host = "127.0.0.1",
): Promise<{ app: FastifyInstance; address: string }> {
	const app = Fastify({ logger: false });
	const metrics = createMetrics({ dataDir });
	const heads = () =>
		new Map(
			[...sources].map(([c, f]) => [
				c,
				f.stats.storedHead == null ? null : { block: f.stats.storedHead, timestamp: null },
			]),
		);
	app.get("/healthz", async () => ({ status: "ok" }));
	app.get("/readyz", async (_req, reply) => {
		const chains = [...sources].map(([chain, f]) => ({
			chain,
			ready: f.stats.lastStepAt != null && f.stats.standby == null,
			// Another process holds the chain's write lock: this one waits to take over.
			standby: f.stats.standby,
			stored_head_block: f.stats.storedHead,
			node_head_block: f.stats.nodeHead,
			lag_blocks: f.stats.nodeHead == null ? null : Math.max(0, f.stats.nodeHead - (f.stats.storedHead ?? -1)),
			blocks_ingested: f.stats.blocksIngested,
			reorgs: f.stats.reorgs,
			faults: f.stats.faults,
			last_step_at: f.stats.lastStepAt ? new Date(f.stats.lastStepAt).toISOString() : null,
			last_fault: f.stats.lastFault && {
				at: new Date(f.stats.lastFault.at).toISOString(),
				message: f.stats.lastFault.message,
			},
			rpc_errors: f.rpcErrors,
			node: nodeStatus(f.stats.node),
		}));
		const ready = chains.length > 0 && chains.every((c) => c.ready);
		return reply.code(ready ? 200 : 503).send({ ready, chains });
	});
	app.get("/metrics", async (_req, reply) =>
		reply.type(metrics.contentType).send(await metrics.render(sources, heads())),
	);
	const address = await app.listen({ port, host });
	return { app, address };
}
