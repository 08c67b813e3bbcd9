/**
 * API keys end to end (api-contract.md §2): `scripts/keys.ts` (run as a child process) prints a
 * new key once on stdout and stores only its SHA-256; a server whose keyring reads that file
 * accepts the key as Bearer and as Basic base64(key:), and refuses it at once after
 * `keys revoke` (no restart); keys from the environment (CHAINLAKE_API_KEYS, via `envKeys`)
 * work too; and the key never shows up in the app's log, which has one line per request with
 * route, status and duration.
 */
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { type ApiFixture, startApiOnWorkload } from "../helpers/api.js";
import { runScript } from "../helpers/cli.js";

let f: ApiFixture;
let tmp: string;

beforeAll(async () => {
	f = await startApiOnWorkload();
	tmp = await mkdtemp(join(tmpdir(), "chainlake-keys-"));
});
afterAll(async () => {
	await f?.close();
	if (tmp) await rm(tmp, { recursive: true, force: true });
});

const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`${key}:`, "utf8").toString("base64")}` });

/** A log sink: pino writes one JSON line per entry. */
function captureLog() {
	let text = "";
	const stream = new Writable({
		write(chunk, _enc, done) {
			text += chunk.toString();
			done();
		},
	});
	return {
		stream,
		get text() {
			return text;
		},
		lines(): Record<string, unknown>[] {
			return text
				.split("\n")
				.filter((l) => l.trim() !== "")
				.map((l) => JSON.parse(l) as Record<string, unknown>);
		},
	};
}

/** A second app over the fixture's data, with its own keyring and a captured log. */
async function appWith(keyring: ReturnType<typeof createKeyring>) {
	const log = captureLog();
	const app: FastifyInstance = await buildApp({
		store: f.store,
		keyring,
		dataDir: f.dataDir,
		logger: { level: "info", stream: log.stream },
	});
	const get = async (url: string, headers: Record<string, string> = {}) => {
		const res = await app.inject({ method: "GET", url, headers });
		return { status: res.statusCode, headers: res.headers, raw: res.body };
	};
	return { app, log, get };
}

async function createKeyCli(file: string, name: string) {
	const res = await runScript("keys.ts", ["create", "--name", name, "--keys-file", file]);
	expect(res.code, res.stderr).toBe(0);
	return res;
}

describe("keys CLI", () => {
	it("create prints a key on stdout exactly once, and the file keeps only its sha256", async () => {
		const file = join(tmp, "create", "keys.json");
		const res = await createKeyCli(file, "alice-laptop");
		const key = res.stdout.trim();
		expect(res.stdout).toBe(`${key}\n`);
		expect(key).toMatch(/^\S{20,}$/);
		expect(res.stdout.split(key).length - 1).toBe(1);
		// stderr explains; it does not repeat the key.
		expect(res.stderr).not.toContain(key);
		expect(res.stderr.length).toBeGreaterThan(0);

		const text = await readFile(file, "utf8");
		expect(text).not.toContain(key);
		expect(text).not.toContain(Buffer.from(key).toString("base64"));
		expect(text).not.toContain(key.slice(3, 23));
		const stored = JSON.parse(text) as Record<string, unknown>[];
		expect(stored).toHaveLength(1);
		expect(stored[0]?.name).toBe("alice-laptop");
		expect(stored[0]?.hash).toBe(sha256(key));
		expect(typeof stored[0]?.id).toBe("string");
		expect(stored[0]?.revoked_at).toBeUndefined();

		// A second key is a different key, appended.
		const second = (await createKeyCli(file, "ci")).stdout.trim();
		expect(second).not.toBe(key);
		const both = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>[];
		expect(both.map((k) => k.hash)).toEqual([sha256(key), sha256(second)]);

		// list shows ids and names, never a key or a hash.
		const list = await runScript("keys.ts", ["list", "--keys-file", file]);
		expect(list.code).toBe(0);
		expect(list.stdout).toContain(stored[0]?.id as string);
		expect(list.stdout).toContain("alice-laptop");
		expect(list.stdout).not.toContain(key);
		expect(list.stdout).not.toContain(second);
		expect(list.stdout).not.toContain(sha256(key));
	});

	it("revoke of an unknown id fails with a message", async () => {
		const file = join(tmp, "unknown", "keys.json");
		await createKeyCli(file, "x");
		const res = await runScript("keys.ts", ["revoke", "nope", "--keys-file", file]);
		expect(res.code).not.toBe(0);
		expect(res.stderr).toContain("nope");
	});
});

describe("a server with a file keyring", () => {
	let file: string;
	let key: string;
	let id: string;
	let other: string;
	let s: Awaited<ReturnType<typeof appWith>>;

	beforeAll(async () => {
		file = join(tmp, "server", "keys.json");
		key = (await createKeyCli(file, "x")).stdout.trim();
		other = (await createKeyCli(file, "y")).stdout.trim();
		const stored = JSON.parse(await readFile(file, "utf8")) as { id: string; hash: string }[];
		id = stored.find((k) => k.hash === sha256(key))?.id as string;
		s = await appWith(createKeyring({ path: file }));
	});
	afterAll(async () => {
		await s?.app.close();
	});

	it("accepts the key as Bearer and as Basic base64(key:), refuses others", async () => {
		const url = `/${f.chain}/v1/blocks/latest`;
		expect((await s.get(url, bearer(key))).status).toBe(200);
		expect((await s.get(url, basic(key))).status).toBe(200);
		expect((await s.get(url, bearer(other))).status).toBe(200);
		// The fixture's env key is not in this keyring.
		expect((await s.get(url, bearer("test-key-0123456789"))).status).toBe(401);
		expect((await s.get(url, bearer(`${key}x`))).status).toBe(401);
		expect((await s.get(url, bearer(sha256(key)))).status).toBe(401);
		expect((await s.get(url)).status).toBe(401);
	});

	it("revoke <id> refuses the key at once, without a restart; other keys keep working", async () => {
		const url = `/${f.chain}/v1/blocks?block_number_start=-3&block_number_end=latest`;
		expect((await s.get(url, bearer(key))).status).toBe(200);
		const res = await runScript("keys.ts", ["revoke", id, "--keys-file", file]);
		expect(res.code, res.stderr).toBe(0);
		for (const headers of [bearer(key), basic(key)]) {
			const r = await s.get(url, headers);
			expect(r.status).toBe(401);
			expect(String(r.headers["www-authenticate"])).toMatch(/^Bearer\b/);
			expect(Object.keys(JSON.parse(r.raw)).sort()).toEqual(["code", "error", "message", "statusCode"]);
		}
		expect((await s.get(url, bearer(other))).status).toBe(200);
		const stored = JSON.parse(await readFile(file, "utf8")) as { id: string; revoked_at?: string }[];
		expect(stored.find((k) => k.id === id)?.revoked_at).toBeTruthy();
		// Revoking twice is refused.
		const again = await runScript("keys.ts", ["revoke", id, "--keys-file", file]);
		expect(again.code).not.toBe(0);
	});

	it("a key created while the server runs works at once", async () => {
		const fresh = (await createKeyCli(file, "late")).stdout.trim();
		expect((await s.get(`/${f.chain}/v1/blocks/latest`, bearer(fresh))).status).toBe(200);
	});
});

describe("environment keys (CHAINLAKE_API_KEYS → envKeys)", () => {
	it("each env key works as Bearer and Basic; unknown keys and empty entries do not", async () => {
		const envKeys = "env-key-one, env-key-two,,".split(",").map((k) => k.trim());
		const s = await appWith(createKeyring({ path: join(tmp, "none", "keys.json"), envKeys }));
		try {
			const url = `/${f.chain}/v1/blocks/latest`;
			for (const k of ["env-key-one", "env-key-two"]) {
				expect((await s.get(url, bearer(k))).status, k).toBe(200);
				expect((await s.get(url, basic(k))).status, k).toBe(200);
			}
			for (const k of ["env-key-three", "env-key-on", "env-key-one,env-key-two"]) {
				expect((await s.get(url, bearer(k))).status, k).toBe(401);
			}
			// An empty entry in the list is not an "empty key" that Basic ":" could match.
			expect((await s.get(url, { authorization: `Basic ${Buffer.from(":").toString("base64")}` })).status).toBe(401);
			expect((await s.get(url, { authorization: "Bearer " })).status).toBe(401);
		} finally {
			await s.app.close();
		}
	});

	it("env keys and file keys work side by side", async () => {
		const file = join(tmp, "both", "keys.json");
		const fileKey = (await createKeyCli(file, "file")).stdout.trim();
		const s = await appWith(createKeyring({ path: file, envKeys: ["env-key-both"] }));
		try {
			const url = `/${f.chain}/v1/blocks/latest`;
			expect((await s.get(url, bearer(fileKey))).status).toBe(200);
			expect((await s.get(url, bearer("env-key-both"))).status).toBe(200);
		} finally {
			await s.app.close();
		}
	});
});

describe("the request log", () => {
	it("never contains the key; one line per request with route, status and ms", async () => {
		const file = join(tmp, "log", "keys.json");
		const key = (await createKeyCli(file, "logged")).stdout.trim();
		const envKey = "env-secret-key-0123456789abcdef";
		const s = await appWith(createKeyring({ path: file, envKeys: [envKey] }));
		try {
			const a = f.work.accounts.alice;
			const v1 = `/${f.chain}/v1`;
			const requests: { url: string; headers: Record<string, string>; status: number; route: string }[] = [
				{ url: `${v1}/blocks/latest`, headers: bearer(key), status: 200, route: "/:chain_id/v1/blocks/latest" },
				{ url: `${v1}/blocks/latest`, headers: basic(key), status: 200, route: "/:chain_id/v1/blocks/latest" },
				{
					url: `${v1}/address/${a}/transfers?asset_type=native`,
					headers: bearer(key),
					status: 200,
					route: "/:chain_id/v1/address/:address/transfers",
				},
				{
					url: `${v1}/address/${a}/txs?limit=0`,
					headers: bearer(key),
					status: 400,
					route: "/:chain_id/v1/address/:address/txs",
				},
				{
					url: `${v1}/txs/0x${"00".repeat(32)}`,
					headers: basic(envKey),
					status: 404,
					route: "/:chain_id/v1/txs/:transaction_hash",
				},
				{ url: `${v1}/blocks/latest`, headers: bearer(envKey), status: 200, route: "/:chain_id/v1/blocks/latest" },
				{
					url: `${v1}/blocks/latest`,
					headers: bearer(`${key}-wrong`),
					status: 401,
					route: "/:chain_id/v1/blocks/latest",
				},
				{
					url: `${v1}/blocks/latest`,
					headers: basic(`${envKey}-wrong`),
					status: 401,
					route: "/:chain_id/v1/blocks/latest",
				},
				{
					url: `${v1}/contracts/creates?origin=${f.work.accounts.deployer}`,
					headers: bearer(key),
					status: 200,
					route: "/:chain_id/v1/contracts/creates",
				},
			];
			for (const r of requests) {
				const res = await s.get(r.url, r.headers);
				expect(res.status, r.url).toBe(r.status);
			}

			const text = s.log.text;
			for (const secret of [key, envKey, `${key}-wrong`, `${envKey}-wrong`]) {
				expect(text).not.toContain(secret);
				expect(text).not.toContain(Buffer.from(`${secret}:`).toString("base64"));
				expect(text).not.toContain(Buffer.from(`${secret}:`).toString("base64").replace(/=+$/, ""));
			}
			expect(text).not.toMatch(/authorization/i);

			const lines = s.log.lines().filter((l) => l.msg === "request");
			expect(lines).toHaveLength(requests.length);
			lines.forEach((line, i) => {
				const r = requests[i];
				expect(line.route, JSON.stringify(line)).toBe(r?.route);
				expect(line.status, JSON.stringify(line)).toBe(r?.status);
				expect(typeof line.ms, JSON.stringify(line)).toBe("number");
				expect(line.ms as number).toBeGreaterThanOrEqual(0);
				expect(line.method).toBe("GET");
			});
			// No other per-request lines (Fastify's own incoming/completed lines stay off).
			const perRequest = s.log.lines().filter((l) => l.reqId !== undefined);
			expect(perRequest).toHaveLength(requests.length);
		} finally {
			await s.app.close();
		}
	});
});
