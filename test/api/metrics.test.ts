/**
 * /metrics in Prometheus text format (prom-client): Node's runtime figures beside ours, on the
 * real app. The chain figures are checked where there is a chain (test/follow/live.test.ts,
 * faults.test.ts, one-writer.test.ts); here, what an operator of a DuckDB-heavy Node server
 * looks at first, and request latency by route.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";

const KEY = "metrics-key";
const AUTH = { authorization: `Bearer ${KEY}` };
let dir: string;
let store: Store;
let app: Awaited<ReturnType<typeof buildApp>>;
beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "chainlake-metrics-"));
	store = await createStore(dir);
	app = await buildApp({
		store,
		keyring: createKeyring({ path: join(dir, "_keys.json"), envKeys: [KEY] }),
		dataDir: dir,
	});
});
afterAll(async () => {
	await app?.close();
	store?.close();
	await rm(dir, { recursive: true, force: true });
});

/** `name{labels} value` lines of a metric, by their labels. */
function samples(text: string, name: string): Map<string, number> {
	const out = new Map<string, number>();
	for (const line of text.split("\n")) {
		const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
		if (m && m[1] === name) out.set(m[2] ?? "", Number(m[3]));
	}
	return out;
}

describe("/metrics", () => {
	it("needs a key on the API (401 saying the ways in), not with metricsPublic (serve --metrics-public)", async () => {
		// Issue 27: it answered anyone. The writer's status port (test/follow/one-writer.test.ts) needs none.
		const none = await app.inject({ url: "/metrics" });
		expect(none.statusCode).toBe(401);
		expect(none.headers["www-authenticate"]).toMatch(/^Bearer/);
		expect(none.json()).toMatchObject({ code: "MISSING_API_KEY" });
		for (const way of ["Authorization: Bearer <key>", "--status-port", "--metrics-public"])
			expect(none.json().message).toContain(way);
		const wrong = await app.inject({ url: "/metrics", headers: { authorization: "Bearer not-a-known-key" } });
		expect(wrong.statusCode).toBe(401);
		expect(wrong.json()).toMatchObject({ code: "INVALID_API_KEY" });
		expect(wrong.body).not.toContain("# TYPE");
		expect((await app.inject({ url: "/metrics", headers: AUTH })).statusCode).toBe(200);
		// metricsPublic: the next test's app, asked without a key.
	});

	it("carries the runtime metrics (event-loop lag, heap, GC, RSS, CPU) beside the service's", async () => {
		for (let i = 0; i < 3; i++) await app.inject({ url: "/healthz" });
		const res = await app.inject({ url: "/metrics", headers: AUTH });
		expect(res.statusCode).toBe(200);
		expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
		const text = res.body;
		for (const name of [
			"nodejs_eventloop_lag_seconds",
			"nodejs_eventloop_lag_p99_seconds",
			"nodejs_heap_size_used_bytes",
			"nodejs_heap_size_total_bytes",
			"process_resident_memory_bytes",
			"process_cpu_seconds_total",
			"nodejs_active_handles_total",
		]) {
			expect(text, name).toContain(`# TYPE ${name} `);
			const values = [...samples(text, name).values()];
			expect(values.length, name).toBeGreaterThan(0);
			for (const v of values) expect(Number.isFinite(v), `${name} = ${v}`).toBe(true);
		}
		expect(text).toContain("# TYPE nodejs_gc_duration_seconds histogram");
		expect([...samples(text, "process_resident_memory_bytes").values()][0]).toBeGreaterThan(10 * 2 ** 20);
		// Ours, under the names they always had.
		expect(samples(text, "chainlake_http_request_duration_seconds_count").get('{route="/healthz"}')).toBe(3);
		for (const name of ["chainlake_head_block", "chainlake_rpc_errors_total", "chainlake_reorgs_total"])
			expect(text).toContain(`# HELP ${name} `);
	});

	it("each app reports its own requests (a registry per app, not the process's global one)", async () => {
		const other = await buildApp({
			store,
			keyring: createKeyring({ path: join(dir, "_keys.json"), envKeys: [] }),
			dataDir: dir,
			metricsPublic: true,
		});
		try {
			await other.inject({ url: "/readyz" });
			const res = await other.inject({ url: "/metrics" });
			expect(res.statusCode).toBe(200);
			const text = res.body;
			expect(samples(text, "chainlake_http_request_duration_seconds_count").get('{route="/readyz"}')).toBe(1);
			expect(samples(text, "chainlake_http_request_duration_seconds_count").has('{route="/healthz"}')).toBe(false);
		} finally {
			await other.close();
		}
	});
});
