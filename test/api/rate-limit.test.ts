/**
 * Per-key rate limits (api-contract.md §3: 429 with Retry-After and X-RateLimit-*), on the real app
 * over a backfilled anvil workload: a key gets `burst` requests at once, each answer counting down
 * in X-RateLimit-Remaining; the next is a 429 with the error body and Retry-After; waiting that
 * long is enough; keys do not share buckets (Bearer and Basic of one key do); requests without a
 * valid key are 401 and take nothing from any bucket (a revoked key too, even over its limit);
 * health, readiness, metrics, the OpenAPI document, the docs and CORS preflights are not limited;
 * the bucket map stays bounded; and scripts/serve.ts applies its flags, environment and default.
 */
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { authenticate } from "../../src/api/auth.js";
import { createKey, createKeyring, revokeKey } from "../../src/api/keys.js";
import { createRateLimiter, parseRateLimit, type RateLimitOptions } from "../../src/api/rate-limit.js";
import { type ApiFixture, startApiOnWorkload } from "../helpers/api.js";
import { runScript, spawnScript } from "../helpers/cli.js";

let f: ApiFixture;
let tmp: string;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
	f = await startApiOnWorkload();
	tmp = await mkdtemp(join(tmpdir(), "chainlake-ratelimit-"));
});
afterEach(async () => {
	for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
	await f?.close();
	if (tmp) await rm(tmp, { recursive: true, force: true });
});

const KEY_A = "rate-key-a-0123456789";
const KEY_B = "rate-key-b-0123456789";
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`${key}:`, "utf8").toString("base64")}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An app over the fixture's data with its own rate limit and keyring. */
async function limited(
	rateLimit: RateLimitOptions | undefined,
	keyring = createKeyring({ path: join(tmp, "none.json"), envKeys: [KEY_A, KEY_B] }),
) {
	const app = await buildApp({ store: f.store, keyring, dataDir: f.dataDir, rateLimit });
	apps.push(app);
	return async (
		url: string,
		headers: Record<string, string> = bearer(KEY_A),
		method: "GET" | "HEAD" | "OPTIONS" = "GET",
	) => {
		const res = await app.inject({ method, url, headers });
		return { status: res.statusCode, headers: res.headers, raw: res.body };
	};
}

const latest = () => `/${f.chain}/v1/blocks/latest`;
const rate = (h: Record<string, unknown>) => ({
	limit: h["x-ratelimit-limit"],
	remaining: h["x-ratelimit-remaining"],
	reset: h["x-ratelimit-reset"],
});

describe("a key's bucket", () => {
	it("lets a burst through, counting down, then answers 429 with Retry-After and the error body", async () => {
		// One token every 5 s: nothing refills while the test runs, so every figure is exact.
		const get = await limited({ perSecond: 0.2, burst: 5 });
		for (let i = 1; i <= 5; i++) {
			const r = await get(latest());
			expect(r.status, r.raw).toBe(200);
			// Remaining counts down; Reset = seconds until the bucket is full again = 5 s per token used.
			expect(rate(r.headers)).toEqual({ limit: "5", remaining: String(5 - i), reset: String(5 * i) });
			expect(r.headers["retry-after"]).toBeUndefined();
		}
		const r = await get(latest());
		expect(r.status).toBe(429);
		expect(String(r.headers["content-type"])).toMatch(/^application\/json/);
		const body = JSON.parse(r.raw) as Record<string, unknown>;
		expect(Object.keys(body).sort()).toEqual(["code", "error", "message", "statusCode"]);
		expect(body).toMatchObject({ statusCode: 429, error: "Too Many Requests", code: "RATE_LIMITED" });
		// The message says what to do: wait (naming the header) and spread requests out.
		expect(body.message).toMatch(/Retry-After/);
		expect(body.message).toMatch(/wait 5 s/);
		// The next token is 5 s away: a whole number of seconds, at least 1.
		expect(r.headers["retry-after"]).toBe("5");
		expect(rate(r.headers)).toEqual({ limit: "5", remaining: "0", reset: "25" });
		expect(String(r.headers["access-control-expose-headers"])).toContain("Retry-After");

		// One bucket per key, not per route: every data route and HEAD are refused now.
		for (const url of [
			`/${f.chain}/v1/blocks?block_number_start=0&block_number_end=latest`,
			`/${f.chain}/v1/address/${f.work.accounts.alice}/transfers`,
			`/${f.chain}/v1/txs/0x${"00".repeat(32)}`,
			`/eip155-999/v1/blocks/latest`,
		]) {
			expect((await get(url)).status, url).toBe(429);
		}
		expect((await get(latest(), bearer(KEY_A), "HEAD")).status).toBe(429);
	});

	it("errors after the limit check keep the X-RateLimit headers", async () => {
		const get = await limited({ perSecond: 0.2, burst: 3 });
		const bad = await get(`/${f.chain}/v1/address/${f.work.accounts.alice}/txs?limit=0`);
		expect(bad.status).toBe(400);
		expect(rate(bad.headers)).toEqual({ limit: "3", remaining: "2", reset: "5" });
		const missing = await get(`/${f.chain}/v1/txs/0x${"00".repeat(32)}`);
		expect(missing.status).toBe(404);
		expect(rate(missing.headers)).toEqual({ limit: "3", remaining: "1", reset: "10" });
	});

	it("honours Retry-After: refused requests take no token, and after waiting the request succeeds", async () => {
		const get = await limited({ perSecond: 1, burst: 2 });
		expect((await get(latest())).status).toBe(200);
		expect((await get(latest())).status).toBe(200);
		let refused = await get(latest());
		expect(refused.status).toBe(429);
		// Hammering while refused does not push the next token further away.
		for (let i = 0; i < 5; i++) refused = await get(latest());
		expect(refused.status).toBe(429);
		const wait = Number(refused.headers["retry-after"]);
		expect(wait).toBe(1);

		await sleep(wait * 1000 + 50);
		const after = await get(latest());
		expect(after.status, after.raw).toBe(200);
		expect(after.headers["x-ratelimit-remaining"]).toBe("0");
		// That token is spent: the next one is refused again.
		expect((await get(latest())).status).toBe(429);
	});

	it("is per key: another key is unaffected; Bearer and Basic of one key share a bucket", async () => {
		const get = await limited({ perSecond: 0.1, burst: 3 });
		for (let i = 0; i < 3; i++) expect((await get(latest(), i % 2 ? basic(KEY_A) : bearer(KEY_A))).status).toBe(200);
		expect((await get(latest(), bearer(KEY_A))).status).toBe(429);
		expect((await get(latest(), basic(KEY_A))).status).toBe(429);

		const b = await get(latest(), bearer(KEY_B));
		expect(b.status).toBe(200);
		expect(rate(b.headers)).toEqual({ limit: "3", remaining: "2", reset: "10" });
		expect((await get(latest(), basic(KEY_B))).headers["x-ratelimit-remaining"]).toBe("1");
		// And A is still refused.
		expect((await get(latest(), bearer(KEY_A))).status).toBe(429);
	});

	it("is keyed by the key's hash, never the key itself", () => {
		const keyring = createKeyring({ path: join(tmp, "none.json"), envKeys: [KEY_A] });
		const id = authenticate(keyring, `Bearer ${KEY_A}`);
		expect(id).toBe(createHash("sha256").update(KEY_A).digest("hex"));
		expect(id).not.toContain(KEY_A);
		expect(authenticate(keyring, basic(KEY_A).authorization)).toBe(id);
	});
});

describe("requests without a valid key", () => {
	it("get 401 and take nothing from any bucket", async () => {
		const get = await limited({ perSecond: 0.1, burst: 2 });
		const anonymous: Record<string, string>[] = [
			{},
			bearer(`${KEY_A}x`),
			bearer(KEY_A.slice(0, -1)),
			basic("nobody"),
			{ authorization: `Token ${KEY_A}` },
			{ authorization: `Bearer ${KEY_A} ${KEY_A}` },
			{ authorization: "Basic !!!" },
		];
		for (let round = 0; round < 3; round++) {
			for (const headers of anonymous) {
				const r = await get(latest(), headers);
				expect(r.status, JSON.stringify(headers)).toBe(401);
				expect(String(r.headers["www-authenticate"])).toMatch(/^Bearer\b/);
				expect(r.headers["x-ratelimit-remaining"]).toBeUndefined();
				expect(r.headers["retry-after"]).toBeUndefined();
			}
		}
		// 21 refused requests later, A's bucket is still full.
		const a = await get(latest(), bearer(KEY_A));
		expect(a.status).toBe(200);
		expect(a.headers["x-ratelimit-remaining"]).toBe("1");
	});

	it("a revoked key gets 401 at once, also while its bucket is empty", async () => {
		const file = join(tmp, "revoke", "keys.json");
		const { key, id } = createKey(file, "to-revoke");
		const other = createKey(file, "stays").key;
		const get = await limited({ perSecond: 0.1, burst: 2 }, createKeyring({ path: file }));
		expect((await get(latest(), bearer(key))).status).toBe(200);
		expect((await get(latest(), bearer(key))).status).toBe(200);
		expect((await get(latest(), bearer(key))).status).toBe(429);

		expect(revokeKey(file, id)).toBe(true);
		for (const headers of [bearer(key), basic(key)]) {
			const r = await get(latest(), headers);
			expect(r.status).toBe(401);
			expect(JSON.parse(r.raw).code).toBe("INVALID_API_KEY");
			expect(r.headers["retry-after"]).toBeUndefined();
			expect(r.headers["x-ratelimit-limit"]).toBeUndefined();
		}
		expect((await get(latest(), bearer(other))).status).toBe(200);
	});
});

describe("routes that are not limited", () => {
	it("health, readiness, metrics, OpenAPI, docs and CORS preflights never count or answer 429", async () => {
		const get = await limited({ perSecond: 0.1, burst: 1 });
		expect((await get(latest())).status).toBe(200);
		expect((await get(latest())).status).toBe(429);
		for (let i = 0; i < 20; i++) {
			for (const [url, status] of [
				["/healthz", 200],
				["/readyz", 200],
				["/metrics", 200],
				["/openapi.json", 200],
				["/docs", 200],
			] as const) {
				const r = await get(url);
				expect(r.status, url).toBe(status);
				expect(r.headers["x-ratelimit-limit"], url).toBeUndefined();
			}
			const pre = await get(
				latest(),
				{ origin: "https://app.example", "access-control-request-method": "GET" },
				"OPTIONS",
			);
			expect(pre.status).toBe(204);
			expect(pre.headers["x-ratelimit-limit"]).toBeUndefined();
		}
	});

	it("no limit when rateLimit is absent (the buildApp default) or perSecond is 0", async () => {
		for (const get of [await limited(undefined), await limited({ perSecond: 0, burst: 1 })]) {
			for (let i = 0; i < 30; i++) {
				const r = await get(latest());
				expect(r.status).toBe(200);
				expect(r.headers["x-ratelimit-limit"]).toBeUndefined();
			}
		}
	});
});

describe("the bucket map", () => {
	it("drops buckets that have refilled, and never holds more than maxBuckets", () => {
		let now = 0;
		const limiter = createRateLimiter({ perSecond: 1, burst: 2, maxBuckets: 100, sweepMs: 1000, now: () => now });
		for (let i = 0; i < 10; i++) limiter.take(`idle-${i}`);
		expect(limiter.size()).toBe(10);
		// 0.5 s later: none has refilled (one token used, one per second), no sweep yet.
		now = 500;
		limiter.take("busy");
		expect(limiter.size()).toBe(11);
		// 1.5 s later every bucket is full again, which is the same as having none: swept.
		now = 1500;
		limiter.take("busy");
		expect(limiter.size()).toBe(1);

		for (let i = 0; i < 1000; i++) {
			limiter.take(`flood-${i}`);
			expect(limiter.size()).toBeLessThanOrEqual(100);
		}
		// A swept bucket comes back full.
		now = 10_000;
		expect(limiter.take("idle-0")).toMatchObject({ allowed: true, remaining: 1 });
	});

	it("carries a charge's whole debt, past the burst: a 37 s SQL statement costs 37 s of the key's requests", () => {
		let now = 0;
		const limiter = createRateLimiter({ perSecond: 50, burst: 100, now: () => now });
		expect(limiter.take("sql").allowed).toBe(true);
		// What api/routes/sql.ts charges for 37 s: every request the key could have sent meanwhile.
		limiter.charge("sql", 37 * 50);
		const refused = limiter.take("sql");
		expect(refused).toMatchObject({ allowed: false, remaining: 0 });
		// Before issue 27 the debt stopped at -burst: 2 s. Now 1,751 requests' worth: about 35 s.
		expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(35);
		now = 30_000;
		expect(limiter.take("sql").allowed).toBe(false);
		now = 36_000;
		expect(limiter.take("sql").allowed).toBe(true);
		// Another key never paid for it.
		expect(limiter.take("other")).toMatchObject({ allowed: true, remaining: 99 });
	});

	it("refuses nonsense settings", () => {
		expect(() => createRateLimiter({ perSecond: 0, burst: 1 })).toThrow(/perSecond/);
		expect(() => createRateLimiter({ perSecond: 1, burst: 0 })).toThrow(/burst/);
		expect(() => createRateLimiter({ perSecond: Number.NaN, burst: 1 })).toThrow(/perSecond/);
	});
});

describe("npm run serve", () => {
	const children: ChildProcess[] = [];
	/** Three servers started at once (each takes seconds to start): default, env + flag, off. */
	let servers: { byDefault: string; fromEnv: string; off: string };
	beforeAll(async () => {
		const [byDefault, fromEnv, off] = await Promise.all([
			serve([]),
			serve(["--rate-burst", "2"], { CHAINLAKE_RATE_LIMIT: "0.1" }),
			serve(["--rate-limit", "0"]),
		]);
		servers = { byDefault, fromEnv, off };
	});
	afterAll(() => {
		for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
	});

	/** Starts scripts/serve.ts on a free port over the fixture's data; resolves with its base URL. */
	async function serve(args: string[], env: Record<string, string> = {}) {
		const child = spawnScript("serve.ts", ["--data-dir", f.dataDir, "--port", "0", ...args], {
			CHAINLAKE_API_KEYS: KEY_A,
			CHAINLAKE_RATE_LIMIT: "",
			CHAINLAKE_RATE_BURST: "",
			...env,
		});
		children.push(child);
		let out = "";
		return new Promise<string>((resolve, reject) => {
			child.stdout?.on("data", (c) => {
				out += c;
				const m = /chainlake API on (http:\/\/[^\s:]+:\d+)/.exec(out);
				if (m?.[1]) resolve(m[1]);
			});
			child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
		});
	}

	const fetchLatest = (base: string) => fetch(`${base}/${f.chain}/v1/blocks/latest`, { headers: bearer(KEY_A) });

	it("limits by default (50/s, bursts of 100)", async () => {
		const r = await fetchLatest(servers.byDefault);
		expect(r.status).toBe(200);
		expect(r.headers.get("x-ratelimit-limit")).toBe("100");
		expect(r.headers.get("x-ratelimit-remaining")).toBe("99");
	});

	it("takes the rate from CHAINLAKE_RATE_LIMIT and the burst from --rate-burst", async () => {
		const statuses: number[] = [];
		let last: Response | undefined;
		for (let i = 0; i < 3; i++) {
			last = await fetchLatest(servers.fromEnv);
			statuses.push(last.status);
		}
		expect(statuses).toEqual([200, 200, 429]);
		if (!last) throw new Error("no answer");
		expect(last.headers.get("retry-after")).toBe("10");
		expect(last.headers.get("x-ratelimit-limit")).toBe("2");
		expect(((await last.json()) as { code: string }).code).toBe("RATE_LIMITED");
		// Not limited: health.
		expect((await fetch(`${servers.fromEnv}/healthz`)).status).toBe(200);
	});

	it("--rate-limit 0 turns it off; bad values exit with a message before serving", async () => {
		for (let i = 0; i < 3; i++) {
			const r = await fetchLatest(servers.off);
			expect(r.status).toBe(200);
			expect(r.headers.get("x-ratelimit-limit")).toBeNull();
		}

		// The process exits with 2 and names the flag (both spellings of a negative value).
		const bad: [string, string[]][] = [
			["--rate-limit", ["--rate-limit", "-1"]],
			["--rate-burst", ["--rate-burst=0"]],
			["--max-response-mb", ["--max-response-mb", "0"]],
			["--query-timeout-ms", ["--query-timeout-ms", "1.5"]],
		];
		const results = await Promise.all(
			bad.map(([, args]) => runScript("serve.ts", ["--data-dir", f.dataDir, "--port", "0", ...args])),
		);
		results.forEach((res, i) => {
			const flag = bad[i]?.[0] ?? "";
			expect(res.code, flag).toBe(2);
			expect(res.stderr, flag).toContain(flag);
		});
		// What the flags and variables go through.
		expect(parseRateLimit(undefined, undefined)).toEqual({ perSecond: 50, burst: 100 });
		expect(parseRateLimit("", "")).toEqual({ perSecond: 50, burst: 100 });
		expect(parseRateLimit("0.5", undefined)).toEqual({ perSecond: 0.5, burst: 1 });
		expect(parseRateLimit("10", "3")).toEqual({ perSecond: 10, burst: 3 });
		expect(parseRateLimit("0", undefined)).toEqual({ perSecond: 0, burst: 1 });
		for (const [r, b] of [
			["-1", "1"],
			["fast", "1"],
			["Infinity", "1"],
			["1", "0"],
			["1", "1.5"],
			["1", "x"],
		]) {
			expect(() => parseRateLimit(r, b), `${r} ${b}`).toThrow(/--rate-(limit|burst) must be/);
		}
	});
});
