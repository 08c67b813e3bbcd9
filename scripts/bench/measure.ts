import { readdirSync, statSync } from "node:fs";
import { Agent, get } from "node:http";
import { join } from "node:path";

/** Latency samples: `n` timed calls after `warmup` untimed ones, summarised as p50/p90/p99 in ms. */
export interface Latency {
	p50: number;
	p90: number;
	p99: number;
	n: number;
}

export async function timeCalls(fn: () => Promise<unknown>, n: number, warmup = 3): Promise<Latency> {
	return summarise((await callTimes(fn, n, warmup)).map((c) => c.ms));
}

/** `n` timed calls of `fn` after `warmup` untimed ones: each call's ms and what it returned. */
export async function callTimes<T>(
	fn: () => Promise<T>,
	n: number,
	warmup: number,
): Promise<{ ms: number; value: T }[]> {
	for (let i = 0; i < warmup; i++) await fn();
	const calls: { ms: number; value: T }[] = [];
	for (let i = 0; i < n; i++) {
		const t = performance.now();
		const value = await fn();
		calls.push({ ms: performance.now() - t, value });
	}
	return calls;
}

export function summarise(ms: number[]): Latency {
	const sorted = [...ms].sort((a, b) => a - b);
	const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
	return { p50: at(0.5), p90: at(0.9), p99: at(0.99), n: ms.length };
}

/** The DuckDB time an answer reports in its `Server-Timing: duckdb;dur=<ms>` header (api/context.ts), if any. */
export function serverDuckDbMs(header: string | null): number | undefined {
	const m = header ? /(?:^|,)\s*duckdb;dur=([\d.]+)/.exec(header) : null;
	return m ? Number(m[1]) : undefined;
}

export const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0));

/** Bytes of every file under `dir`, recursively. */
export function folderBytes(dir: string): number {
	let bytes = 0;
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		const p = join(dir, e.name);
		bytes += e.isDirectory() ? folderBytes(p) : statSync(p).size;
	}
	return bytes;
}

/**
 * A GET client over one kept-alive socket (node:http): the HTTP figures' client. `fetch` (undici)
 * costs 0.1-0.8 ms more a request on this machine than node:http on the same service (measured
 * side by side, BENCHMARKS.md "fourteenth figures"); PostgreSQL's figures go through its own
 * client over one kept connection, so each side is timed through a lean client of its own.
 */
export function keepAliveClient(headers: Record<string, string>) {
	const agent = new Agent({ keepAlive: true, maxSockets: 1 });
	return {
		get: (url: string) =>
			new Promise<{ status: number; serverTiming: string | null }>((resolve, reject) => {
				get(url, { agent, headers }, (res) => {
					res.on("data", () => {});
					res.on("end", () => {
						const t = res.headers["server-timing"];
						resolve({ status: res.statusCode ?? 0, serverTiming: typeof t === "string" ? t : null });
					});
					res.on("error", reject);
				}).on("error", reject);
			}),
		close: () => agent.destroy(),
	};
}
