import { DEFAULT_TIMEOUTS } from "../api/server-timeouts.js";

export interface HaproxySetup {
	/** Where HAProxy listens. */
	bind: { host: string; port: number };
	/** The API processes (`npm run serve`), each on its own port. */
	readers: { host: string; port: number }[];
}

const s = (ms: number) => `${Math.ceil(ms / 1000)}s`;

/**
 * HAProxy's configuration for N API processes over one lake (README "Scaling out"). Every choice
 * follows from the service:
 * - `balance hdr(Authorization)` with consistent hashing: one API key always reaches the same
 *   process while it is up, so the per-process rate limit is the key's whole limit and its
 *   queries warm one process's caches (a request without the header goes round robin);
 * - `/readyz` as the health check: a process is sent requests once it can serve the data, and
 *   taken out after two failed checks a second apart;
 * - timeouts just above the service's own (src/api/server-timeouts.ts), so a slow query ends
 *   in the service's 503 with its error body rather than in HAProxy's 504, and idle connections
 *   to a process are closed by HAProxy before the process closes them (no request sent on a
 *   connection being closed);
 * - streams (api/live/streams.ts) pass as long answers: their heartbeats (15 s at most) keep
 *   them within the inactivity timeouts; a stream cut by a process going away is resumed by its
 *   client on another one with Last-Event-ID (cursors are self-contained);
 * - retries on another process: a connection refused (a process stopped or restarting) for any
 *   request, and for GET and HEAD (every data route: they only read) a process that died with the
 *   request in flight (its connection closed with no answer), which was a 502 (issue 27). Not a
 *   slow answer (it would run twice, and the client waits twice), and not the SQL endpoint's
 *   POST: a statement that took a process down is not sent to the next one.
 */
export function haproxyConfig(setup: HaproxySetup): string {
	const t = DEFAULT_TIMEOUTS;
	return `# chainlake: N API processes (npm run serve) over one lake, one writer (npm run follow).
# Written by src/cluster/haproxy-config.ts; \`npm run cluster\` writes its own for --processes N.
global
    maxconn 4096

defaults
    mode http
    option http-keep-alive
    timeout connect 5s
    timeout client ${s(t.idleMs)}
    timeout http-request ${s(t.headersMs)}
    # Above the service's handler deadline (${s(t.handlerMs)}): its own 503 reaches the client.
    timeout server ${s(t.handlerMs + 5_000)}
    # Below the service's keep-alive (${s(t.keepAliveMs)}): HAProxy closes idle connections first.
    timeout http-keep-alive ${s(t.keepAliveMs - 5_000)}
    # Streams (Server-Sent Events) stay open for hours: their head events every 15 s or less keep
    # them inside the client and server inactivity timeouts above; a connection HAProxy sees as a
    # tunnel (an upgrade) gets an hour of silence.
    timeout tunnel 1h
    # A process that refuses the connection (stopped, restarting), or closes it with no answer
    # (killed with the request in flight): the request goes to another process. \`redispatch 1\`:
    # every retry picks a process again, past the one that failed (the key's hash would pick it).
    retries 2
    option redispatch 1
    retry-on conn-failure empty-response junk-response

frontend chainlake
    bind ${setup.bind.host}:${setup.bind.port}
    default_backend readers

backend readers
    # Each API key on one process: exact per-key rate limits, warm caches.
    balance hdr(Authorization)
    hash-type consistent
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 1s fall 2 rise 1
    # Only reads are sent again once they reached a process (a refused connection is retried for all).
    http-request disable-l7-retry unless METH_GET || METH_HEAD
${setup.readers.map((r, i) => `    server reader${i + 1} ${r.host}:${r.port} check`).join("\n")}
`;
}

/** The configuration in deploy/haproxy.cfg: HAProxy on 8080, two API processes on 8081 and 8082. */
export const EXAMPLE_SETUP: HaproxySetup = {
	bind: { host: "127.0.0.1", port: 8080 },
	readers: [
		{ host: "127.0.0.1", port: 8081 },
		{ host: "127.0.0.1", port: 8082 },
	],
};
