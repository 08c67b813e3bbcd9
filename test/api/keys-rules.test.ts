/**
 * The key file and the key rule (src/api/keys.ts, src/api/auth.ts), on a real chain folder (the
 * recorded mainnet block, backfilled) served through app.inject, and the real CLIs as child
 * processes:
 * - a damaged key file stops `serve` at start with a message naming the file and the fix (no
 *   stack), and `keys` refuses to touch it;
 * - damaged while serving, every data request is 503 KEYS_UNAVAILABLE (not 500, not the last good
 *   key set: a key revoked by an edit that broke the file stays refused, env keys too), /healthz
 *   stays up, /readyz says why it is not ready; fixed, it recovers by itself;
 * - one rule for keys (RFC 6750 token characters): Bearer and Basic accept exactly the same keys,
 *   CHAINLAKE_API_KEYS entries that break it are refused at start by position, never printed.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKey, createKeyring, isValidKey, type Keyring } from "../../src/api/keys.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { createMemoryLogger } from "../../src/util/logger.js";
import { startRecordedRpc } from "../fixtures/recorded-rpc.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { runScript } from "../helpers/cli.js";

const CHAIN_ID = 4660;
const BLOCK = 0x76250;
const LATEST = `/eip155-${CHAIN_ID}/v1/blocks/latest`;
const ENV_KEY = "env-key-0123456789";

let dataDir: string;
let tmp: string;
let store: Store;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
	const server = await startRecordedRpc();
	try {
		dataDir = await mkdtemp(join(tmpdir(), "chainlake-keys-rules-data-"));
		await backfillInto(dataDir, server.url, CHAIN_ID, { from: BLOCK, to: BLOCK, traces: "off" });
	} finally {
		await server.close();
	}
	store = await createStore(dataDir);
	tmp = await mkdtemp(join(tmpdir(), "chainlake-keys-rules-"));
});
afterAll(async () => {
	for (const app of apps) await app.close();
	store?.close();
	for (const d of [dataDir, tmp]) if (d) await rm(d, { recursive: true, force: true });
});

const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
/** Basic base64(user:), the username's bytes as `encoding` (clients differ: UTF-8 or Latin-1). */
const basic = (key: string, encoding: BufferEncoding = "utf8") => ({
	authorization: `Basic ${Buffer.from(`${key}:`, encoding).toString("base64")}`,
});

async function serveWith(keyring: Keyring) {
	const app = await buildApp({ store, keyring, dataDir, logger: false });
	apps.push(app);
	return async (url: string, headers: Record<string, string> = {}) => {
		const res = await app.inject({ method: "GET", url, headers });
		const body = res.json() as Record<string, unknown>;
		// Every error has the project's shape (api-contract.md §3); /readyz adds its chains to it.
		if (res.statusCode >= 400) {
			const keys = Object.keys(body).filter((k) => url !== "/readyz" || (k !== "ready" && k !== "chains"));
			expect(keys.sort(), res.body).toEqual(["code", "error", "message", "statusCode"]);
			expect(body.statusCode).toBe(res.statusCode);
		}
		return { status: res.statusCode, body };
	};
}

/** A key file entry as `npm run keys -- create` writes it, for a key of the test's choosing. */
const entry = (key: string, id: string, revoked = false) => ({
	id,
	name: id,
	hash: sha256(key),
	created_at: "2024-01-01T00:00:00.000Z",
	...(revoked ? { revoked_at: "2024-01-02T00:00:00.000Z" } : {}),
});

/** Damage done by hand: [what, the file's text]. */
const DAMAGED: [string, string][] = [
	["not JSON (an edit cut short)", `[{"id": "a1", "name": "x", "hash": "${"ab".repeat(32)}"`],
	["not a list", '{"keys": []}'],
	["revoked_at: true", JSON.stringify([{ ...entry("k", "a1"), revoked_at: true }])],
	["a hash that is not hex", JSON.stringify([{ ...entry("k", "a1"), hash: "not-a-hash" }])],
];

describe("a damaged key file at start", () => {
	it.each(DAMAGED)("%s: serve exits non-zero naming the file and the fix, without a stack", async (_what, text) => {
		const dir = join(tmp, `start-${sha256(text).slice(0, 8)}`);
		mkdirSync(dir, { recursive: true });
		const file = join(dir, "_keys.json");
		writeFileSync(file, text);
		const res = await runScript("serve.ts", ["--data-dir", dataDir, "--keys-file", file, "--port", "0"]);
		expect(res.code, res.stderr).toBe(2);
		expect(res.stderr).toContain(`the API key file ${file} is damaged`);
		expect(res.stderr).toContain("fix it or restore it");
		expect(res.stderr).toContain("npm run keys -- list");
		expect(res.stderr).not.toMatch(/^\s+at /m);
		expect(res.stderr.trim().split("\n")).toHaveLength(1);
		expect(res.stdout).not.toContain("chainlake API on");
	});

	it("the keys CLI refuses it too, and writes nothing over it", async () => {
		const file = join(tmp, "cli-damaged", "_keys.json");
		mkdirSync(join(tmp, "cli-damaged"));
		const text = DAMAGED[0]?.[1] as string;
		writeFileSync(file, text);
		for (const args of [["list"], ["create", "--name", "n"], ["revoke", "a1"]]) {
			const res = await runScript("keys.ts", [...args, "--keys-file", file]);
			expect(res.code, args.join(" ")).toBe(1);
			expect(res.stderr).toContain(`the API key file ${file} is damaged (not JSON`);
			expect(res.stderr).not.toMatch(/^\s+at /m);
			expect(res.stdout).toBe("");
			expect(readFileSync(file, "utf8")).toBe(text);
		}
	});
});

describe("a key file damaged while serving", () => {
	it("fails closed with 503 KEYS_UNAVAILABLE, keeps /healthz, says why in /readyz, and recovers when fixed", async () => {
		const file = join(tmp, "serving", "_keys.json");
		const keep = createKey(file, "keep").key;
		const revoke = createKey(file, "revoke");
		const log = createMemoryLogger();
		const get = await serveWith(createKeyring({ path: file, envKeys: [ENV_KEY], log }));
		for (const k of [keep, revoke.key, ENV_KEY]) expect((await get(LATEST, bearer(k))).status).toBe(200);
		expect((await get("/readyz")).status).toBe(200);

		const good = JSON.parse(readFileSync(file, "utf8")) as { id: string; revoked_at?: string }[];
		const revoked = good.map((k) => (k.id === revoke.id ? { ...k, revoked_at: new Date().toISOString() } : k));
		// A hand edit that revokes a key and breaks the file (a trailing comma), then one with a wrong shape.
		for (const broken of [
			`${JSON.stringify(revoked, null, 1).slice(0, -2)},\n]`,
			JSON.stringify(revoked.map((k) => ({ ...k, revoked_at: k.revoked_at !== undefined }))),
		]) {
			writeFileSync(file, broken);
			for (const headers of [bearer(revoke.key), basic(revoke.key), bearer(keep), bearer(ENV_KEY), {}, bearer("x")]) {
				const r = await get(LATEST, headers);
				expect(r.status, JSON.stringify(headers)).toBe(503);
				expect(r.body).toMatchObject({ error: "Service Unavailable", code: "KEYS_UNAVAILABLE" });
				expect(String(r.body.message)).toContain("key file _keys.json is damaged");
				expect(String(r.body.message)).toContain("fix it or restore it");
				// The file's name, not where it is (a 5xx names no path: api-contract.md §3).
				expect(String(r.body.message)).not.toContain(tmp);
			}
			expect(await get("/healthz")).toEqual({ status: 200, body: { status: "ok" } });
			const ready = await get("/readyz");
			expect(ready.status).toBe(503);
			expect(ready.body).toMatchObject({ ready: false, code: "KEYS_UNAVAILABLE" });
			expect(String(ready.body.message)).toContain("key file _keys.json is damaged");
		}
		// The operator's log says where and what.
		expect(log.lines.filter((l) => l.startsWith(`error the API key file ${file} is damaged (not JSON`))).toHaveLength(
			1,
		);
		expect(log.lines.filter((l) => l.startsWith(`error the API key file ${file} is damaged (entry 1`))).toHaveLength(1);

		// Fixed: the edit applies, nothing restarted.
		writeFileSync(file, JSON.stringify(revoked, null, 1));
		expect((await get(LATEST, bearer(revoke.key))).status).toBe(401);
		expect((await get(LATEST, basic(revoke.key))).status).toBe(401);
		for (const k of [keep, ENV_KEY]) expect((await get(LATEST, basic(k))).status).toBe(200);
		expect((await get("/readyz")).status).toBe(200);
		expect(log.lines.at(-1)).toContain(`the API key file ${file} reads again`);

		// No file at all is not damage: no file keys, env keys still work.
		rmSync(file);
		expect((await get(LATEST, bearer(keep))).status).toBe(401);
		expect((await get(LATEST, bearer(ENV_KEY))).status).toBe(200);
	});
});

describe("one rule for keys, both ways", () => {
	/** Every character the rule allows besides letters and digits; '=' only at the end. */
	const PUNCTUATED = "Key-._~+/09==";

	it("a key with every allowed punctuation character works as Bearer and as Basic", async () => {
		expect(isValidKey(PUNCTUATED)).toBe(true);
		const file = join(tmp, "punct", "_keys.json");
		mkdirSync(join(tmp, "punct"));
		const fileKey = "/+~_.-file-key=";
		writeFileSync(file, JSON.stringify([entry(fileKey, "f1")]));
		const get = await serveWith(createKeyring({ path: file, envKeys: [PUNCTUATED] }));
		for (const k of [PUNCTUATED, fileKey]) {
			expect((await get(LATEST, bearer(k))).status).toBe(200);
			expect((await get(LATEST, basic(k))).status).toBe(200);
			expect((await get(LATEST, basic(k, "latin1"))).status).toBe(200);
		}
	});

	it("keys that cannot be sent both ways work neither way, even with their hash in the key file", async () => {
		// Hand-added hashes: the file cannot tell which key a hash is of, so the rule applies to what is sent.
		const bad = ["k:colon", "ключ", "naïve", "a=b", 'q"uote', "semi;colon", "back\\slash", "(paren)"];
		const file = join(tmp, "bad-keys", "_keys.json");
		mkdirSync(join(tmp, "bad-keys"));
		writeFileSync(file, JSON.stringify(bad.map((k, i) => entry(k, `b${i}`))));
		const get = await serveWith(createKeyring({ path: file }));
		for (const k of bad) {
			// As a client sends it: UTF-8 bytes (which Node reads as Latin-1 characters) for Bearer,
			// UTF-8 or Latin-1 inside Basic.
			const asBearer = bearer(Buffer.from(k, "utf8").toString("latin1"));
			for (const headers of [asBearer, basic(k), basic(k, "latin1")]) {
				const r = await get(LATEST, headers);
				expect(r.status, `${k} ${headers.authorization}`).toBe(401);
			}
		}
		// Before, `k:colon` worked as Bearer, `ключ` as Basic.
		expect((await get(LATEST, bearer("k:colon"))).body.code).toBe("INVALID_API_KEY");
		expect((await get(LATEST, basic("ключ"))).body.code).toBe("INVALID_API_KEY");
	});

	it("any string: Bearer and Basic answer the same, 200 exactly for keys within the rule (property)", async () => {
		const printable = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)) });
		const ruled = fc.stringMatching(/^[A-Za-z0-9._~+/-]{1,20}=*$/);
		const any = fc.oneof(printable, ruled, fc.string({ unit: "grapheme", minLength: 1 }));
		const samples = fc.sample(
			any.filter((s) => s.length > 0 && !/\s/.test(s)),
			{ numRuns: 150, seed: 7 },
		);
		const file = join(tmp, "property", "_keys.json");
		mkdirSync(join(tmp, "property"));
		writeFileSync(file, JSON.stringify(samples.map((k, i) => entry(k, `p${i}`))));
		const get = await serveWith(createKeyring({ path: file }));
		let valid = 0;
		for (const k of samples) {
			const want = isValidKey(k) ? 200 : 401;
			if (want === 200) valid++;
			const viaBearer = (await get(LATEST, bearer(Buffer.from(k, "utf8").toString("latin1")))).status;
			const viaBasic = (await get(LATEST, basic(k))).status;
			expect([viaBearer, viaBasic], k).toEqual([want, want]);
		}
		// Both kinds were tried.
		expect(valid).toBeGreaterThan(20);
		expect(samples.length - valid).toBeGreaterThan(20);
	});

	it("keys created by npm run keys -- create are within the rule", async () => {
		const file = join(tmp, "created", "_keys.json");
		const res = await runScript("keys.ts", ["create", "--keys-file", file]);
		expect(res.code, res.stderr).toBe(0);
		const keys = [res.stdout.trim(), ...Array.from({ length: 300 }, (_, i) => createKey(file, `k${i}`).key)];
		expect(keys.filter((k) => !isValidKey(k))).toEqual([]);
		const get = await serveWith(createKeyring({ path: file }));
		for (const k of keys.slice(0, 20)) {
			expect((await get(LATEST, bearer(k))).status).toBe(200);
			expect((await get(LATEST, basic(k))).status).toBe(200);
		}
	});

	it("CHAINLAKE_API_KEYS entries that break the rule are refused at start by position, never printed", async () => {
		for (const [env, position] of [
			["good-key,k:colon", "entry 2 of 2"],
			["ключ", "entry 1 of 1"],
			["a,,b c,d", "entry 3 of 4"],
			["ok=,a=b", "entry 2 of 2"],
		] as const) {
			expect(() => createKeyring({ path: join(tmp, "none.json"), envKeys: env.split(",") })).toThrow(
				expect.objectContaining({ code: "INVALID_API_KEYS_ENV", message: expect.stringContaining(position) }),
			);
		}
		const res = await runScript("serve.ts", ["--data-dir", dataDir, "--port", "0"], {
			CHAINLAKE_API_KEYS: "good-key-1, sec:ret-key ,good-key-2",
			CHAINLAKE_KEYS_FILE: join(tmp, "none.json"),
		});
		expect(res.code, res.stderr).toBe(2);
		expect(res.stderr).toContain("CHAINLAKE_API_KEYS entry 2 of 3");
		expect(res.stderr).not.toContain("sec:ret");
		expect(res.stderr).not.toMatch(/^\s+at /m);
	});
});
