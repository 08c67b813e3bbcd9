/**
 * CORS and security headers, and what must never leave the server, on the real app over a
 * backfilled anvil workload: every answer (200 in each format, 4xx, 404, 429, health, metrics,
 * HEAD) carries `Access-Control-Allow-Origin: *` (no credentials), exposes the paging and
 * rate-limit headers, nosniff, no-referrer, no-store and a CSP that allows nothing, and no
 * X-Powered-By or Server header on the wire; a browser preflight for a data route is a 204
 * without a key; /docs keeps working under its own CSP (every script and stylesheet it loads is
 * same-origin and served). A 500 (closed store, corrupt Parquet file) and raw malformed HTTP
 * never show an API key, SQL or a file path, in the answer or in the log (captured at trace).
 */
import { cp, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AppOptions, buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { type ApiFixture, AUTH, startApiOnWorkload, TEST_KEY } from "../helpers/api.js";

let f: ApiFixture;
let v1: string;
let tmp: string;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
	f = await startApiOnWorkload({ app: { rateLimit: { perSecond: 1000, burst: 1000 } } });
	v1 = `/${f.chain}/v1`;
	tmp = await mkdtemp(join(tmpdir(), "chainlake-headers-"));
});
afterEach(async () => {
	for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
	await f?.close();
	if (tmp) await rm(tmp, { recursive: true, force: true });
});

const EXPOSED = [
	"X-RateLimit-Limit",
	"X-RateLimit-Remaining",
	"X-RateLimit-Reset",
	"Retry-After",
	"X-Has-More",
	"X-Next-Offset",
	"X-Start-Block",
	"X-End-Block",
	"Server-Timing",
];

type Headers = Record<string, string | string[] | number | undefined>;

/** The headers every answer of the API carries, whatever its status. */
function expectSecurityHeaders(h: Headers, what: string) {
	expect(h["access-control-allow-origin"], what).toBe("*");
	// With a wildcard origin, credentials must never be allowed.
	expect(h["access-control-allow-credentials"], what).toBeUndefined();
	const exposed = String(h["access-control-expose-headers"])
		.split(",")
		.map((s) => s.trim().toLowerCase());
	for (const name of EXPOSED) expect(exposed, `${what}: ${name}`).toContain(name.toLowerCase());
	expect(h["x-content-type-options"], what).toBe("nosniff");
	expect(h["referrer-policy"], what).toBe("no-referrer");
	expect(h["x-powered-by"], what).toBeUndefined();
	expect(h.server, what).toBeUndefined();
}

/**
 * A data or health answer: a CSP under which nothing may load or run; never kept by a cache but
 * a data route's 200, which only its caller's own cache may keep, revalidated by its ETag
 * (test/api/http-cache.test.ts).
 */
function expectApiHeaders(h: Headers, what: string) {
	expectSecurityHeaders(h, what);
	const data200 = what.includes("/v1/") && / 200$/.test(what);
	expect(h["cache-control"], what).toBe(data200 ? "private, no-cache" : "no-store");
	const csp = String(h["content-security-policy"]);
	expect(csp, what).toMatch(/(^|;\s*)default-src 'none'(;|$)/);
	expect(csp, what).toMatch(/frame-ancestors 'none'/);
	expect(csp, what).not.toMatch(/unsafe|\*/);
}

describe("every answer", () => {
	it("carries CORS and security headers: 200 in each format, 4xx, 404, 429, health, metrics, HEAD", async () => {
		const a = f.work.accounts.alice;
		const cases: [string, Record<string, string>, number, "GET" | "HEAD"][] = [
			[`${v1}/blocks/latest`, AUTH, 200, "GET"],
			[`${v1}/address/${a}/transfers?asset_type=native&limit=2`, AUTH, 200, "GET"],
			[`${v1}/address/${a}/transfers?asset_type=native&limit=2&format=csv`, AUTH, 200, "GET"],
			[`${v1}/address/${a}/transfers?asset_type=native&limit=2&format=ndjson`, AUTH, 200, "GET"],
			[`${v1}/address/${a}/transfers?asset_type=native&limit=2&format=arrow`, AUTH, 200, "GET"],
			[`${v1}/blocks/latest`, AUTH, 200, "HEAD"],
			[`${v1}/address/${a}/txs?limit=0`, AUTH, 400, "GET"],
			[`${v1}/blocks/latest`, {}, 401, "GET"],
			[`${v1}/txs/0x${"00".repeat(32)}`, AUTH, 404, "GET"],
			["/eip155-999/v1/blocks/latest", AUTH, 404, "GET"],
			["/no/such/route", {}, 404, "GET"],
			["/healthz", {}, 200, "GET"],
			["/readyz", {}, 200, "GET"],
			["/metrics", AUTH, 200, "GET"],
			["/metrics", {}, 401, "GET"],
			["/openapi.json", {}, 200, "GET"],
		];
		for (const [url, headers, status, method] of cases) {
			const res = await f.app.inject({ method, url, headers });
			const what = `${method} ${url} → ${res.statusCode}`;
			expect(res.statusCode, what).toBe(status);
			expectApiHeaders(res.headers, what);
			if (url.startsWith(v1) && status !== 401) expect(res.headers["x-ratelimit-limit"], what).toBe("1000");
		}

		// A 429 too.
		const app = await buildApp({
			store: f.store,
			keyring: createKeyring({ path: join(tmp, "none.json"), envKeys: [TEST_KEY] }),
			dataDir: f.dataDir,
			rateLimit: { perSecond: 0.1, burst: 1 },
		});
		apps.push(app);
		await app.inject({ url: `${v1}/blocks/latest`, headers: AUTH });
		const limited = await app.inject({ url: `${v1}/blocks/latest`, headers: AUTH });
		expect(limited.statusCode).toBe(429);
		expectApiHeaders(limited.headers, "429");
	});

	it("a data answer tells its DuckDB time (Server-Timing); one that read nothing says 0, the others say nothing", async () => {
		const timing = (h: Headers) => /^duckdb;dur=(\d+\.\d\d)$/.exec(String(h["server-timing"]))?.[1];
		const tx = f.work.txs[0]?.hash as string;
		const started = performance.now();
		const found = await f.app.inject({ url: `${v1}/txs/${tx}`, headers: AUTH });
		const wall = performance.now() - started;
		expect(found.statusCode).toBe(200);
		const ms = Number(timing(found.headers));
		// Its statements' time: more than nothing, less than the whole request.
		expect(ms).toBeGreaterThan(0);
		expect(ms).toBeLessThanOrEqual(wall);
		// A list and an error after statements say it too.
		const list = await f.app.inject({ url: `${v1}/address/${f.work.accounts.alice}/transfers?limit=2`, headers: AUTH });
		expect(Number(timing(list.headers))).toBeGreaterThan(0);
		// A hash no key filter admits runs no statement.
		const missing = await f.app.inject({ url: `${v1}/txs/0x${"00".repeat(32)}`, headers: AUTH });
		expect(missing.statusCode).toBe(404);
		expect(timing(missing.headers)).toBe("0.00");
		// No chain's data opened: no header.
		for (const [url, status] of [
			["/healthz", 200],
			[`${v1}/blocks/latest?x=1`, 400],
			["/eip155-999/v1/blocks/latest", 404],
		] as const) {
			const res = await f.app.inject({ url, headers: AUTH });
			expect(res.statusCode, url).toBe(status);
			expect(res.headers["server-timing"], url).toBeUndefined();
		}
	});

	it("on the wire: no X-Powered-By, no Server, no version anywhere in the headers", async () => {
		const app = await buildApp({
			store: f.store,
			keyring: createKeyring({ path: join(tmp, "none.json"), envKeys: [TEST_KEY] }),
			dataDir: f.dataDir,
		});
		apps.push(app);
		const base = await app.listen({ port: 0, host: "127.0.0.1" });
		for (const [url, headers] of [
			[`${v1}/blocks/latest`, AUTH],
			[`${v1}/blocks/latest`, {}],
			["/healthz", {}],
			["/nope", {}],
		] as const) {
			const res = await fetch(`${base}${url}`, { headers });
			const h = Object.fromEntries(res.headers);
			expectApiHeaders(h, `${url} → ${res.status}`);
			expect(JSON.stringify(h), url).not.toMatch(/fastify|node|v\d+\.\d+/i);
		}
	});
});

describe("CORS preflight", () => {
	const preflight = {
		origin: "https://wallet.example",
		"access-control-request-method": "GET",
		"access-control-request-headers": "authorization, accept",
	};

	it("answers 204 for every data route, without a key, with the allowed methods and headers", async () => {
		const a = f.work.accounts.alice;
		for (const url of [
			`${v1}/blocks/latest`,
			`${v1}/blocks?block_number_start=0&block_number_end=latest`,
			`${v1}/address/${a}/transfers?asset_type=native`,
			`${v1}/address/${a}/txs`,
			`${v1}/txs/0x${"ab".repeat(32)}/logs`,
			`${v1}/events?contract=${f.work.contracts.token20}`,
			`${v1}/calls?from=${a}`,
			`${v1}/contracts/creates?origin=${a}`,
			`${v1}/contract/${f.work.contracts.token20}/transfers`,
		]) {
			const res = await f.app.inject({ method: "OPTIONS", url, headers: preflight });
			expect(res.statusCode, url).toBe(204);
			expect(res.body, url).toBe("");
			const h = res.headers;
			expectSecurityHeaders(h, url);
			const methods = String(h["access-control-allow-methods"])
				.split(",")
				.map((m) => m.trim());
			expect(methods.sort(), url).toEqual(["GET", "HEAD", "OPTIONS"]);
			const allowed = String(h["access-control-allow-headers"]).toLowerCase();
			expect(allowed, url).toContain("authorization");
			expect(allowed, url).toContain("accept");
			expect(Number(h["access-control-max-age"]), url).toBeGreaterThan(0);
			// Not authenticated, not counted.
			expect(h["www-authenticate"], url).toBeUndefined();
			expect(h["x-ratelimit-limit"], url).toBeUndefined();
		}
	});

	it("is answered under the base path, and the GET that follows carries the exposed headers", async () => {
		const app = await buildApp({
			store: f.store,
			keyring: createKeyring({ path: join(tmp, "none.json"), envKeys: [TEST_KEY] }),
			dataDir: f.dataDir,
			basePath: "/tsunami",
		});
		apps.push(app);
		const url = `/tsunami${v1}/address/${f.work.accounts.alice}/transfers?asset_type=native&limit=1&format=csv`;
		const pre = await app.inject({ method: "OPTIONS", url, headers: preflight });
		expect(pre.statusCode).toBe(204);
		const res = await app.inject({ url, headers: { ...AUTH, origin: preflight.origin } });
		expect(res.statusCode).toBe(200);
		expect(res.headers["access-control-allow-origin"]).toBe("*");
		expect(res.headers["x-has-more"]).toBe("true");
		expect(String(res.headers["access-control-expose-headers"])).toContain("X-Next-Offset");
	});
});

describe("/docs", () => {
	it("is a 200 HTML page whose scripts and styles are all same-origin, served, and allowed by its CSP", async () => {
		const res = await f.app.inject({ url: "/docs" });
		expect(res.statusCode).toBe(200);
		expect(String(res.headers["content-type"])).toMatch(/^text\/html/);
		expectSecurityHeaders(res.headers, "/docs");
		const csp = String(res.headers["content-security-policy"]);
		expect(csp).toMatch(/script-src 'self'(;|$)/);
		expect(csp).not.toMatch(/unsafe-eval/);
		expect(csp).toMatch(/frame-ancestors 'none'/);
		expect(csp).toMatch(/connect-src 'self'/);

		// No inline script (script-src 'self' would block it): every <script> has a src and no body.
		const scripts = [...res.body.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
		expect(scripts.length).toBeGreaterThan(0);
		for (const [, attrs, inner] of scripts) {
			expect(attrs).toMatch(/\ssrc="/);
			expect(inner?.trim()).toBe("");
		}
		expect(res.body).not.toMatch(/\son[a-z]+=/i);
		// Every script and stylesheet is a same-origin path, and is served.
		const refs = [...res.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
		expect(refs.length).toBeGreaterThanOrEqual(4);
		for (const ref of refs) {
			expect(ref, ref).toMatch(/^\/docs\//);
			const asset = await f.app.inject({ url: ref });
			expect(asset.statusCode, ref).toBe(200);
			expect(asset.headers["x-content-type-options"], ref).toBe("nosniff");
			if (ref.endsWith(".js")) expect(String(asset.headers["content-type"]), ref).toMatch(/javascript/);
			if (ref.endsWith(".css")) expect(String(asset.headers["content-type"]), ref).toMatch(/text\/css/);
		}
		// The document Swagger UI loads.
		const spec = await f.app.inject({ url: "/docs/json" });
		expect(spec.statusCode).toBe(200);
		expect(spec.json().openapi).toMatch(/^3\./);
	});
});

/** A log sink at trace level: pino writes one JSON line per entry. */
function captureLog() {
	let text = "";
	const stream = new Writable({
		write(chunk, _enc, done) {
			text += chunk.toString();
			done();
		},
	});
	return {
		options: { level: "trace", stream } as AppOptions["logger"],
		get text() {
			return text;
		},
		lines: () =>
			text
				.split("\n")
				.filter((l) => l.trim() !== "")
				.map((l) => JSON.parse(l) as Record<string, unknown>),
	};
}

/** Text that must never appear in an answer or a log line: keys, SQL, paths, stack frames. */
function expectNoLeak(text: string, what: string, secrets: string[], dataDir: string) {
	for (const s of secrets) {
		expect(text, what).not.toContain(s);
		expect(text, what).not.toContain(Buffer.from(`${s}:`).toString("base64").replace(/=+$/, ""));
	}
	expect(text, what).not.toContain(dataDir);
	expect(text, what).not.toContain(tmpdir());
	expect(text, what).not.toMatch(/\.parquet|\.ts:\d|\.js:\d|node_modules|\/work\/|\/home\/|\/tmp\//);
	expect(text, what).not.toMatch(/\bSELECT\b|\bFROM\b|read_parquet|\{blocks\}|WHERE/);
	expect(text, what).not.toMatch(/\n\s+at /);
	// The log has no header values at all (answers may name the Authorization header in advice).
	if (what === "log") expect(text, what).not.toMatch(/rawPacket|authorization|bearer|basic /i);
}

describe("nothing leaks", () => {
	/** An app over `store` with a captured log and a key in the keyring. */
	async function appOver(store: Store, dataDir: string) {
		const log = captureLog();
		const app = await buildApp({
			store,
			keyring: createKeyring({ path: join(tmp, "none.json"), envKeys: [TEST_KEY] }),
			dataDir,
			logger: log.options,
		});
		apps.push(app);
		return { app, log };
	}

	const dataUrls = () => [
		`${v1}/blocks/latest`,
		`${v1}/blocks?block_number_start=0&block_number_end=latest`,
		`${v1}/address/${f.work.accounts.alice}/transfers?asset_type=native,ft,nft`,
		`${v1}/txs/${f.work.expected.oddLogTxHash}`,
	];

	it("a 500 from a closed store: the body and the log name no key, SQL or path, only the request id", async () => {
		const store = await createStore(f.dataDir);
		const { app, log } = await appOver(store, f.dataDir);
		// Warm up on a route that is not memoised (the latest block is kept per manifest state).
		expect((await app.inject({ url: `${v1}/txs/${f.work.expected.oddLogTxHash}`, headers: AUTH })).statusCode).toBe(
			200,
		);
		store.close();
		for (const url of dataUrls()) {
			const res = await app.inject({ url, headers: AUTH });
			expect(res.statusCode, url).toBe(500);
			const body = res.json() as Record<string, string>;
			expect(body.code).toBe("INTERNAL");
			expect(body.error).toBe("Internal Server Error");
			const reqId = /request id (\S+)/.exec(String(body.message))?.[1];
			expect(reqId, body.message).toBeTruthy();
			// The log has an error line for that request id, which an operator can find.
			expect(log.lines().some((l) => l.reqId === reqId && l.level === 50)).toBe(true);
			expectNoLeak(res.body, url, [TEST_KEY], f.dataDir);
			expectApiHeaders(res.headers, url);
		}
		expectNoLeak(log.text, "log", [TEST_KEY], f.dataDir);
	});

	it("a corrupt Parquet file (DuckDB names the file in its error): a 503 DATA_DAMAGED, and nothing of it shows", async () => {
		const copy = join(tmp, "corrupt");
		await cp(f.dataDir, copy, { recursive: true });
		// Every Parquet file of the chain, whichever datasets a route reads.
		const files = (await readdir(join(copy, f.chain), { recursive: true })).filter((p) => p.endsWith(".parquet"));
		expect(files.length).toBeGreaterThan(5);
		for (const file of files) await writeFile(join(copy, f.chain, file), "not a parquet file");
		const store = await createStore(copy);
		try {
			const { app, log } = await appOver(store, copy);
			for (const url of dataUrls().slice(0, 3)) {
				const res = await app.inject({ url, headers: AUTH });
				expect(res.statusCode, url).toBe(503);
				expect(res.json().code, url).toBe("DATA_DAMAGED");
				expectNoLeak(res.body, url, [TEST_KEY], copy);
			}
			// The log names the damaged files for the operator, relative to the data folder: never
			// the folder itself, a key or DuckDB's own text.
			expect(log.text).not.toContain(copy);
			expect(log.text).not.toContain(TEST_KEY);
			expect(log.text).not.toMatch(/Invalid Input Error|No magic bytes|\/tmp\//);
			const damaged = log.lines().filter((l) => l.code === "DATA_DAMAGED");
			expect(damaged).toHaveLength(3);
			expect(JSON.stringify(damaged[0])).toMatch(new RegExp(`"${f.chain}/blocks/blocks_\\d+_\\d+_g\\d+\\.parquet"`));
		} finally {
			store.close();
		}
	});

	it("keys sent in malformed Authorization headers, or in raw malformed HTTP, never reach the log", async () => {
		const { app, log } = await appOver(f.store, f.dataDir);
		const secret = "sk-secret-0123456789abcdef";
		const malformed = [
			`Bearer ${secret} extra`,
			`Token ${secret}`,
			`Bearer${secret}`,
			`Basic ${secret}`,
			`Basic ${Buffer.from(secret).toString("base64")}`,
			`Basic ${Buffer.from(`${secret}:`).toString("base64")}!`,
			`bearer ${secret}`,
			`${secret}`,
			`Bearer ${TEST_KEY}x${secret}`,
		];
		for (const authorization of malformed) {
			const res = await app.inject({ url: `${v1}/blocks/latest`, headers: { authorization } });
			expect(res.statusCode, authorization).toBe(401);
			expectNoLeak(res.body, authorization, [secret], f.dataDir);
		}
		// A key in the query string is refused as an unknown parameter, its value not echoed.
		const inQuery = await app.inject({ url: `${v1}/blocks/latest?api_key=${secret}`, headers: AUTH });
		expect(inQuery.statusCode).toBe(400);
		expectNoLeak(inQuery.body, "api_key", [secret], f.dataDir);

		// Raw HTTP the parser rejects, with the key in it: our error body, and only a code in the log.
		const base = new URL(await app.listen({ port: 0, host: "127.0.0.1" }));
		const raw = async (text: string) =>
			new Promise<string>((resolve, reject) => {
				const socket = connect(Number(base.port), base.hostname);
				let got = "";
				socket.on("data", (c) => {
					got += c.toString("latin1");
				});
				socket.on("close", () => resolve(got));
				socket.on("error", reject);
				socket.write(text, "latin1");
			});
		const badHeader = await raw(
			`GET ${v1}/blocks/latest HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nBad Header\u0001: y\r\n\r\n`,
		);
		expect(badHeader).toMatch(/^HTTP\/1\.1 400 /);
		expect(JSON.parse(badHeader.slice(badHeader.indexOf("\r\n\r\n") + 4))).toMatchObject({
			statusCode: 400,
			code: "MALFORMED_REQUEST",
		});
		const huge = await raw(
			`GET ${v1}/blocks/latest HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
		);
		expect(huge).toMatch(/^HTTP\/1\.1 431 /);
		expect(huge).toContain('"code":"HEADERS_TOO_LARGE"');
		for (const text of [badHeader, huge]) expectNoLeak(text, "raw answer", [secret], f.dataDir);

		const text = log.text;
		expectNoLeak(text, "log", [secret, TEST_KEY], f.dataDir);
		// Byte arrays (how pino would print a raw packet) are not there either.
		expect(text).not.toContain(JSON.stringify([...Buffer.from(secret.slice(0, 8))]).slice(1, -1));
		const clientErrors = log.lines().filter((l) => l.msg === "client connection error");
		expect(clientErrors.map((l) => l.status).sort()).toEqual([400, 431]);
	});
});
