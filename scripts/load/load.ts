import { readFileSync } from "node:fs";
import autocannon from "autocannon";
import { DEFAULT_TIMEOUTS } from "../../src/api/server-timeouts.js";

export interface LoadOptions {
	/** The service, e.g. http://127.0.0.1:18080. */
	base: string;
	key: string;
	/** Absolute paths; each request asks one picked at random. */
	paths: string[];
	connections: number;
	seconds: number;
	/** Stop after this many requests instead (autocannon's `amount`: `seconds` is then ignored). */
	requests?: number;
	/** The service's process, for its memory. */
	pid: number;
}

export interface LoadResult {
	connections: number;
	seconds: number;
	requests: number;
	requestsPerSecond: number;
	/** Connection errors and timeouts (no answer at all). */
	errors: number;
	timeouts: number;
	/** Answers by status code. */
	statuses: Record<string, number>;
	non2xx: number;
	latencyMs: { p50: number; p99: number; max: number };
	/** The service's resident memory, sampled once a second, bytes. */
	rssSamples: number[];
	/** Mean RSS of the run's last third over its first third (after the first second), minus 1. */
	rssGrowth: number;
}

const rssOf = (pid: number) => {
	const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
	return Number(m?.[1] ?? 0) * 1024;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/**
 * A closed-loop load: `connections` clients, each sending its next request as soon as the last
 * one is answered, for `seconds`, over the paths in turn. Measures answers by status, latency and
 * the service's memory over the run (growth would be a leak: caches must level off).
 */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
	const samples: number[] = [];
	// xorshift32 from a fixed seed.
	let state = 0x9e3779b9;
	const next = () => {
		state ^= state << 13;
		state ^= state >>> 17;
		state ^= state << 5;
		return state >>> 0;
	};
	const sampler = setInterval(() => samples.push(rssOf(o.pid)), 1000);
	try {
		const r = await autocannon({
			url: o.base,
			connections: o.connections,
			duration: o.seconds,
			...(o.requests !== undefined ? { amount: o.requests } : {}),
			headers: { authorization: `Bearer ${o.key}` },
			// Each request picks its path at random (seeded, so runs are comparable): autocannon
			// walks a request list in lockstep on every connection, which would send all clients
			// the same question at the same moment instead of a mix.
			requests: [{ method: "GET", setupRequest: (req) => ({ ...req, path: o.paths[next() % o.paths.length] }) }],
			// A request still unanswered after this counts as a timeout: "bounded latency".
			timeout: 60,
			// The service's last answer on a socket (maxRequestsPerSocket) says Connection: close and
			// later requests on it get 503; clients (fetch, HAProxy) reconnect, autocannon does not:
			// it would count every later answer on that socket as a 503 (a fast run hit it at 16,000
			// requests from 16 connections). So reconnect as a client does, at the cap. (autocannon
			// leaves the answer it reconnects after out of its counts: one in 1,000.)
			reconnectRate: DEFAULT_TIMEOUTS.maxRequestsPerSocket,
		});
		const statuses: Record<string, number> = {};
		for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) statuses[code] = (s as { count: number }).count;
		const steady = samples.slice(1);
		const third = Math.max(1, Math.floor(steady.length / 3));
		return {
			connections: o.connections,
			seconds: o.seconds,
			requests: r.requests.total,
			requestsPerSecond: r.requests.average,
			errors: r.errors,
			timeouts: r.timeouts,
			statuses,
			non2xx: r.non2xx,
			latencyMs: { p50: r.latency.p50, p99: r.latency.p99, max: r.latency.max },
			rssSamples: samples,
			rssGrowth: mean(steady.slice(-third)) / mean(steady.slice(0, third)) - 1,
		};
	} finally {
		clearInterval(sampler);
	}
}
