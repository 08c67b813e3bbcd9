import fs, { type PathLike } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllowHosts } from "../../src/api/hooks/destinations.js";
import { saveManifest } from "../../src/store/delta/save-manifest.js";
import { manifestPath } from "../../src/store/format/layout.js";
import { loadManifest } from "../../src/store/format/manifest.js";
import { openViews } from "../helpers/anvil-chain.js";
import { type ApiFixture, AUTH, startApiOnWorkload } from "../helpers/api.js";

/**
 * HTTP caching (src/api/http-cache.ts): an ETag per manifest generation and request, 304 for a
 * matching If-None-Match until a write commits, `immutable` for answers wholly at or below the
 * final block, `no-cache` for the rest, `no-store` for errors.
 */
let api: ApiFixture;
let txs: { hash: string; block: number }[];
let tip: number;

beforeAll(async () => {
	// Webhooks to loopback allowed: the hooks routes' answers are checked below (no delivery is made).
	api = await startApiOnWorkload({ app: { hookPolicy: parseAllowHosts("127.0.0.1") } });
	const views = await openViews(api.dataDir, 31337);
	try {
		txs = (await views.rows("SELECT transaction_hash AS h, block_number AS b FROM transactions ORDER BY id")).map(
			(r) => ({ hash: String(r.h), block: Number(r.b) }),
		);
	} finally {
		views.close();
	}
	tip = Math.max(...txs.map((t) => t.block));
}, 180_000);

afterAll(async () => {
	await api?.close();
});

const url = (path: string) => `/${api.chain}/v1${path}`;
const get = (path: string, headers: Record<string, string> = {}) =>
	api.app.inject({ url: url(path), headers: { ...AUTH, ...headers } });

/** Records the folder's final block as a follower does (manifest final_through), in a new save. */
async function setFinal(block: number) {
	const m = await loadManifest(api.dataDir, api.chain, 31337);
	m.final_through = block;
	await saveManifest(api.dataDir, m);
}

describe("HTTP caching", () => {
	it("answers with an ETag; the same ETag in If-None-Match gets 304 without a body until a write commits", async () => {
		const first = txs[0] as { hash: string };
		const a = await get(`/txs/${first.hash}`);
		expect(a.statusCode).toBe(200);
		const etag = a.headers.etag as string;
		expect(etag).toMatch(/^W\/"\d+-[A-Za-z0-9_-]+"$/);
		expect(a.headers["cache-control"]).toBe("private, no-cache");

		const again = await get(`/txs/${first.hash}`, { "if-none-match": etag });
		expect(again.statusCode).toBe(304);
		expect(again.body).toBe("");
		expect(again.headers.etag).toBe(etag);
		// No statement ran: no DuckDB time to tell.
		expect(again.headers["server-timing"]).toBeUndefined();
		// A list of tags, and the strong spelling of the weak tag, match too.
		expect((await get(`/txs/${first.hash}`, { "if-none-match": `"x", ${etag.slice(2)}` })).statusCode).toBe(304);
		// "*" matches any answer there is: 304 for a transaction that exists, 404 for one that does not.
		const star = await get(`/txs/${first.hash}`, { "if-none-match": "*" });
		expect(star.statusCode).toBe(304);
		expect(star.body).toBe("");
		expect(star.headers.etag).toBe(etag);
		expect(star.headers["cache-control"]).toBe("private, no-cache");
		expect((await get(`/txs/0x${"ab".repeat(32)}`, { "if-none-match": "*" })).statusCode).toBe(404);

		// Another request, another tag: a tag never answers for another URL or format.
		const other = await get(`/txs/${(txs[1] as { hash: string }).hash}`, { "if-none-match": etag });
		expect(other.statusCode).toBe(200);
		expect(other.headers.etag).not.toBe(etag);
		const list = `/address/${api.work.accounts.alice}/txs?limit=5`;
		const asJson = await get(list);
		const asCsv = await get(list, { accept: "text/csv", "if-none-match": asJson.headers.etag as string });
		expect(asCsv.statusCode).toBe(200);
		expect(asCsv.headers.etag).not.toBe(asJson.headers.etag);

		// A write (a new manifest generation) makes the old tag stale.
		await setFinal(-1);
		const after = await get(`/txs/${first.hash}`, { "if-none-match": etag });
		expect(after.statusCode).toBe(200);
		expect(after.headers.etag).not.toBe(etag);
		expect(after.json()).toEqual(a.json());
	});

	it("sends answers wholly at or below the final block as immutable, the others as no-cache, errors as no-store", async () => {
		await setFinal(tip - 1);
		const old = txs.find((t) => t.block < tip - 1) as { hash: string };
		const newest = txs.find((t) => t.block === tip) as { hash: string };
		expect((await get(`/txs/${old.hash}`)).headers["cache-control"]).toBe("private, max-age=31536000, immutable");
		expect((await get(`/txs/${old.hash}/logs`)).headers["cache-control"]).toBe("private, max-age=31536000, immutable");
		expect((await get(`/txs/${newest.hash}`)).headers["cache-control"]).toBe("private, no-cache");

		const alice = api.work.accounts.alice;
		const finalPage = await get(`/address/${alice}/txs?block_number_start=0&block_number_end=${tip - 1}&limit=5`);
		expect(finalPage.statusCode).toBe(200);
		expect(finalPage.headers["cache-control"]).toBe("private, max-age=31536000, immutable");
		const toHead = await get(`/address/${alice}/txs?limit=5`);
		expect(toHead.headers["cache-control"]).toBe("private, no-cache");

		const missing = await get(`/txs/0x${"ab".repeat(32)}`);
		expect(missing.statusCode).toBe(404);
		expect(missing.headers["cache-control"]).toBe("no-store");
		expect(missing.headers.etag).toBeUndefined();
		const bad = await get("/txs/0x12");
		expect(bad.statusCode).toBe(400);
		expect(bad.headers["cache-control"]).toBe("no-store");
		// Without a key: 401, never a 304, whatever If-None-Match says.
		const tag = (await get(`/txs/${old.hash}`)).headers.etag as string;
		const anonymous = await api.app.inject({ url: url(`/txs/${old.hash}`), headers: { "if-none-match": tag } });
		expect(anonymous.statusCode).toBe(401);
	});

	it("looks at the chain's manifest once a request: the ETag's check and the route read one snapshot", async () => {
		const manifest = manifestPath(api.dataDir, api.chain);
		const looks: string[] = [];
		const statSync = fs.statSync;
		const writable = fs as { statSync: typeof fs.statSync };
		// (node:fs's own export replaced, and the ESM bindings of every module importing it updated.)
		writable.statSync = ((path: PathLike, ...rest: never[]) => {
			if (String(path) === manifest) looks.push(String(path));
			return statSync(path, ...rest);
		}) as typeof fs.statSync;
		syncBuiltinESMExports();
		try {
			const first = txs[0] as { hash: string };
			for (const path of [`/txs/${first.hash}`, `/address/${api.work.accounts.alice}/transfers?limit=2`]) {
				looks.length = 0;
				const res = await get(path);
				expect(res.statusCode).toBe(200);
				expect(res.headers.etag).toBeDefined();
				expect(looks, path).toHaveLength(1);
			}
		} finally {
			writable.statSync = statSync;
			syncBuiltinESMExports();
		}
	});

	it("does not cache an NFT answer holding content fetched from its token URI (CHAINLAKE_FETCH_TOKEN_URIS=1)", async () => {
		const nft = (path: string) => api.app.inject({ url: `/nft/${api.chain}/v1${path}`, headers: AUTH });
		const token = api.work.contracts.token1155.toLowerCase();
		const alice = api.work.accounts.alice.toLowerCase();
		// Without fetching, the answer is the files' (the URI as the node gave it): cached.
		const fromFiles = await nft(`/${token}/1/metadata`);
		expect(fromFiles.statusCode, fromFiles.body).toBe(200);
		expect(fromFiles.headers.etag).toBeDefined();
		process.env.CHAINLAKE_FETCH_TOKEN_URIS = "1";
		try {
			// Its URI's host (tokens.example.invalid) never answers: content null, which must not be kept.
			for (const path of [`/${token}/1/metadata`, `/${alice}/inventory?metadata=true`]) {
				const fetched = await nft(path);
				expect(fetched.statusCode, path).toBe(200);
				expect(fetched.headers.etag, path).toBeUndefined();
				expect(fetched.headers["cache-control"], path).toBe("no-store");
			}
			// A page without the content is still the files' alone.
			expect((await nft(`/${alice}/inventory`)).headers.etag).toBeDefined();
		} finally {
			delete process.env.CHAINLAKE_FETCH_TOKEN_URIS;
		}
	});

	it("never caches the webhooks' answers: they change with the hooks and their deliveries, not with the chain's files", async () => {
		const list = await get("/hooks");
		expect(list.statusCode).toBe(200);
		expect(list.headers.etag).toBeUndefined();
		expect(list.headers["cache-control"]).toBe("no-store");
		const made = await api.app.inject({
			method: "POST",
			url: url("/hooks"),
			headers: { ...AUTH, "content-type": "application/json" },
			payload: {
				path: url(`/address/${api.work.accounts.alice}/txs`),
				url: "http://127.0.0.1:9/in",
				secret: "a-secret-of-24-characters",
			},
		});
		expect(made.statusCode, made.body).toBe(201);
		const id = made.json().id as string;
		// A client holding the first list (a browser sends its tag by itself) gets the new one, not a 304.
		const again = await get("/hooks", { "if-none-match": "*" });
		expect(again.statusCode).toBe(200);
		expect(again.json().items.map((h: { id: string }) => h.id)).toContain(id);
		const one = await get(`/hooks/${id}`, { "if-none-match": "*" });
		expect(one.statusCode).toBe(200);
		expect(one.headers.etag).toBeUndefined();
		expect(one.headers["cache-control"]).toBe("no-store");
		expect((await api.app.inject({ method: "DELETE", url: url(`/hooks/${id}`), headers: AUTH })).statusCode).toBe(204);
	});
});
