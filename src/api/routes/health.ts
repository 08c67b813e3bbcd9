import type { FastifyInstance } from "fastify";
import { readManifestSafe } from "../../store/manifest.js";
import type { ApiContext } from "../context.js";

/** Liveness and readiness; no key needed (for load balancers and orchestrators). */
export function healthRoutes(app: FastifyInstance, ctx: ApiContext, dataDir: string) {
	app.get("/healthz", { schema: { summary: "Process is up", tags: ["health"] } }, async () => ({ status: "ok" }));

	app.get(
		"/readyz",
		{ schema: { summary: "Per chain: data present, head block, lag", tags: ["health"] } },
		async (_req, reply) => {
			const chains = await Promise.all(
				ctx.store.chains().map(async (chain) => {
					const manifest = readManifestSafe(dataDir, chain);
					try {
						const [row] = await ctx.store.query(
							chain,
							"SELECT number, timestamp FROM {blocks} ORDER BY number DESC LIMIT 1",
						);
						const head = row ? Number(row.number) : null;
						const lagSeconds = row ? Math.max(0, Math.round(Date.now() / 1000) - Number(row.timestamp)) : null;
						return {
							chain,
							ready: head != null,
							head_block: head,
							head_lag_seconds: lagSeconds,
							ranges: manifest?.chunks.length ?? 0,
							traces_unavailable_ranges: manifest?.chunks.filter((c) => c.traces === "none").length ?? 0,
						};
					} catch {
						return {
							chain,
							ready: false,
							head_block: null,
							head_lag_seconds: null,
							ranges: 0,
							traces_unavailable_ranges: 0,
						};
					}
				}),
			);
			const ready = chains.length > 0 && chains.every((c) => c.ready);
			return reply.code(ready ? 200 : 503).send({ ready, chains });
		},
	);
}
