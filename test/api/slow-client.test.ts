/**
 * Slow clients cannot pin the server (src/api/server-timeouts.ts), on the real app listening on a
 * real port over a backfilled anvil workload, with short deadlines: a client trickling its headers
 * a line at a time (slowloris) and one that sends nothing are answered 408 and disconnected at the
 * header deadline, while other clients are served meanwhile, also with fifty such clients
 * connected; an idle keep-alive socket is closed after the keep-alive timeout; a socket serves at
 * most maxRequestsPerSocket requests; a handler slower than its deadline answers 503 TIMEOUT.
 * buildApp's defaults are the documented ones.
 */
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import type { ServerTimeouts } from "../../src/api/server-timeouts.js";
import { type ApiFixture, AUTH, startApiOnWorkload, TEST_KEY } from "../helpers/api.js";

let f: ApiFixture;
let app: FastifyInstance;
let port: number;

const TIMEOUTS: Partial<ServerTimeouts> = {
	headersMs: 1000,
	requestMs: 2000,
	checkEveryMs: 100,
	keepAliveMs: 1500,
	maxRequestsPerSocket: 3,
};

async function appWith(timeouts: Partial<ServerTimeouts>) {
	return buildApp({
		store: f.store,
		keyring: createKeyring({ path: join(f.dataDir, "_none.json"), envKeys: [TEST_KEY] }),
		dataDir: f.dataDir,
		timeouts,
	});
}

beforeAll(async () => {
	f = await startApiOnWorkload();
	app = await appWith(TIMEOUTS);
	port = Number(new URL(await app.listen({ port: 0, host: "127.0.0.1" })).port);
});
afterAll(async () => {
	await app?.close();
	await f?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw connection that records what it receives and when it was closed. */
function open(): Promise<{ socket: Socket; received: () => string; closed: Promise<number>; openedAt: number }> {
	return new Promise((resolve, reject) => {
		const socket = connect(port, "127.0.0.1");
		let got = "";
		socket.on("data", (c) => {
			got += c.toString("utf8");
		});
		const closed = new Promise<number>((r) => socket.on("close", () => r(performance.now())));
		socket.once("error", () => {});
		socket.once("connect", () => resolve({ socket, received: () => got, closed, openedAt: performance.now() }));
		socket.once("error", reject);
	});
}

/** Sends header lines one at a time, every `everyMs`, never finishing; returns how many were sent. */
function trickle(socket: Socket, everyMs: number) {
	let sent = 0;
	socket.write(`GET /${f.chain}/v1/blocks/latest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_KEY}\r\n`);
	const timer = setInterval(() => {
		if (socket.destroyed) return clearInterval(timer);
		socket.write(`X-Slow-${sent++}: still typing\r\n`);
	}, everyMs);
	socket.on("close", () => clearInterval(timer));
	return () => sent;
}

/** A well-behaved client's request to a data route. */
const served = async () => {
	const res = await fetch(`http://127.0.0.1:${port}/${f.chain}/v1/blocks/latest`, { headers: AUTH });
	await res.arrayBuffer();
	return { status: res.status };
};

describe("slow clients", () => {
	it("a client trickling its headers is answered 408 and cut off at the header deadline; others are served meanwhile", async () => {
		const slow = await open();
		const sent = trickle(slow.socket, 150);
		// While it trickles, other clients get their answers: it is still connected after them.
		await sleep(300);
		for (let i = 0; i < 3; i++) expect((await served()).status).toBe(200);
		expect(slow.socket.destroyed).toBe(false);

		const closedAt = await slow.closed;
		const lived = closedAt - slow.openedAt;
		// Cut off once headersMs has passed (checked every 100 ms), not before, and not much after.
		expect(lived).toBeGreaterThanOrEqual(950);
		expect(lived).toBeLessThan(1000 + 100 + 600);
		// It really was sending all along: each line reset nothing.
		expect(sent()).toBeGreaterThanOrEqual(5);
		const answer = slow.received();
		expect(answer).toMatch(/^HTTP\/1\.1 408 /);
		expect(answer).toMatch(/connection: close/i);
		const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
		expect(body).toMatchObject({ statusCode: 408, error: "Request Timeout", code: "REQUEST_TIMEOUT" });
		expect(body.message).toMatch(/send the whole request at once/);
	});

	it("a connection that sends nothing is closed at the same deadline", async () => {
		const idle = await open();
		const lived = (await idle.closed) - idle.openedAt;
		expect(lived).toBeGreaterThanOrEqual(950);
		expect(lived).toBeLessThan(1700);
	});

	it("fifty slow clients at once do not keep others from being served, and are all cut off", async () => {
		const slow = await Promise.all(Array.from({ length: 50 }, () => open()));
		for (const s of slow) trickle(s.socket, 100);
		await sleep(200);
		const answers = await Promise.all(Array.from({ length: 10 }, () => served()));
		for (const a of answers) expect(a.status).toBe(200);
		// All ten were answered while the fifty were still connected.
		expect(slow.filter((s) => s.socket.destroyed)).toHaveLength(0);
		const closed = await Promise.all(slow.map((s) => s.closed.then((at) => at - s.openedAt)));
		expect(Math.max(...closed)).toBeLessThan(1000 + 100 + 1000);
		for (const s of slow) expect(s.received()).toMatch(/^HTTP\/1\.1 408 /);
		// And the server still answers.
		expect((await served()).status).toBe(200);
	});

	it("an idle keep-alive connection is closed after the keep-alive timeout", async () => {
		const c = await open();
		c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
		while (!c.received().includes('{"status":"ok"}')) await sleep(10);
		const answeredAt = performance.now();
		expect(c.received()).toMatch(/^HTTP\/1\.1 200 /);
		// Clients are told 1 s (whole seconds, rounded down); Node closes 1 s after keepAliveMs, so
		// a client that honours the header never sends on a socket being closed.
		expect(c.received()).toMatch(/keep-alive: timeout=1\b/i);
		const idleFor = (await c.closed) - answeredAt;
		expect(idleFor).toBeGreaterThanOrEqual(1400);
		expect(idleFor).toBeLessThan(1500 + 1000 + 600);
	});

	it("a socket serves at most maxRequestsPerSocket requests, then is closed", async () => {
		const c = await open();
		for (let i = 1; i <= 3; i++) {
			c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
			while ((c.received().match(/\{"status":"ok"\}/g) ?? []).length < i) await sleep(10);
		}
		// The third answer says so; a fourth request on that socket is refused, not served.
		c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
		const lived = (await c.closed) - c.openedAt;
		const answers = c.received().split(/(?=HTTP\/1\.1 )/);
		expect(answers).toHaveLength(4);
		expect(answers[0]).toMatch(/connection: keep-alive/i);
		expect(answers[2]).toMatch(/^HTTP\/1\.1 200 [\s\S]*connection: close/i);
		expect(answers[3]).toMatch(/^HTTP\/1\.1 503 /);
		expect(lived).toBeLessThan(1500 + 1000 + 1000);
	});
});

describe("slow handlers", () => {
	it("a request not answered within handlerMs gets a 503 TIMEOUT", async () => {
		const hurried = await appWith({ handlerMs: 1 });
		try {
			const url = `/${f.chain}/v1/address/${f.work.accounts.alice}/transfers?asset_type=native,ft,nft&limit=1000`;
			const res = await hurried.inject({ url, headers: AUTH });
			expect(res.statusCode).toBe(503);
			const body = res.json() as Record<string, unknown>;
			expect(body).toMatchObject({ statusCode: 503, error: "Service Unavailable", code: "TIMEOUT" });
			expect(String(body.message)).toMatch(/narrow the range|lower limit/);
		} finally {
			await hurried.close();
		}
	});
});

describe("defaults", () => {
	it("buildApp sets every deadline deliberately", async () => {
		const d = await appWith({});
		try {
			const s = d.server;
			expect(s.headersTimeout).toBe(10_000);
			expect(s.requestTimeout).toBe(30_000);
			expect(s.timeout).toBe(60_000);
			expect(s.keepAliveTimeout).toBe(65_000);
			expect(s.maxRequestsPerSocket).toBe(1000);
		} finally {
			await d.close();
		}
	});
});
