/**
 * The cap on one list answer (AppOptions.maxResponseBytes, `--max-response-mb`), on the real app
 * over a backfilled anvil workload: in each format (JSON, NDJSON, CSV, Arrow) a page exactly at
 * the cap is sent unchanged, one byte over is a 400 RESPONSE_TOO_LARGE with the error body of
 * api-contract.md §3, no paging headers and a message naming a smaller limit; that limit works,
 * and paging on with it returns every item of the original page. A single item over the cap says
 * so. The default cap is 32 MiB.
 */
import { join } from "node:path";
import { tableFromIPC } from "apache-arrow";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import { type ApiFixture, AUTH, startApiOnWorkload, TEST_KEY } from "../helpers/api.js";

let f: ApiFixture;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
	f = await startApiOnWorkload();
});
afterEach(async () => {
	for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
	await f?.close();
});

async function appWithCap(maxResponseBytes?: number) {
	const app = await buildApp({
		store: f.store,
		keyring: createKeyring({ path: join(f.dataDir, "_none.json"), envKeys: [TEST_KEY] }),
		dataDir: f.dataDir,
		maxResponseBytes,
	});
	apps.push(app);
	return app;
}

/** Every transfer of the workload's busiest wallet, all asset types: the largest list there is. */
const transfers = (query: string) =>
	`/${f.chain}/v1/address/${f.work.accounts.alice}/transfers?asset_type=native,ft,nft&${query}`;

const FORMATS = ["json", "ndjson", "csv", "arrow"] as const;

/** The item ids of a list answer in any format. */
function idsOf(format: (typeof FORMATS)[number], res: { body: string; rawPayload: Buffer }): string[] {
	if (format === "json") return (JSON.parse(res.body) as { items: { id: string }[] }).items.map((i) => i.id);
	if (format === "ndjson")
		return res.body
			.split("\n")
			.filter(Boolean)
			.map((l) => (JSON.parse(l) as { id: string }).id);
	if (format === "csv") {
		const [header, ...rows] = res.body.split("\n").filter(Boolean);
		const col = (header ?? "").split(",").indexOf("id");
		return rows.map((r) => r.split(",")[col] as string);
	}
	return [...(tableFromIPC(res.rawPayload).getChild("id") ?? [])].map(String);
}

describe("a list answer over the cap", () => {
	for (const format of FORMATS) {
		it(`${format}: exactly the cap is sent; one byte more is a 400 naming a limit that fits, which works`, async () => {
			const url = transfers(`limit=1000&format=${format}`);
			const full = await f.app.inject({ url, headers: AUTH });
			expect(full.statusCode, full.body.slice(0, 300)).toBe(200);
			const size = full.rawPayload.length;
			const items = JSON.parse((await f.app.inject({ url: transfers("limit=1000"), headers: AUTH })).body).items as {
				id: string;
			}[];
			expect(items.length).toBeGreaterThan(10);

			// At the cap: sent, byte for byte the same.
			const atCap = await (await appWithCap(size)).inject({ url, headers: AUTH });
			expect(atCap.statusCode).toBe(200);
			expect(atCap.rawPayload.equals(full.rawPayload)).toBe(true);

			// One byte less room: refused before anything is sent.
			const small = await appWithCap(size - 1);
			const over = await small.inject({ url, headers: AUTH });
			expect(over.statusCode).toBe(400);
			expect(String(over.headers["content-type"])).toMatch(/^application\/json/);
			const body = over.json() as Record<string, unknown>;
			expect(Object.keys(body).sort()).toEqual(["code", "error", "message", "statusCode"]);
			expect(body).toMatchObject({ statusCode: 400, error: "Bad Request", code: "RESPONSE_TOO_LARGE" });
			const message = String(body.message);
			expect(message).toMatch(/narrow the range/);
			expect(message).toContain(`this page has ${items.length} items`);
			for (const h of ["x-has-more", "x-next-offset", "x-start-block", "x-end-block"]) {
				expect(over.headers[h], h).toBeUndefined();
			}

			// The limit the message suggests fits; paging on with it gets every item of the big page.
			const suggested = Number(/lower limit to (\d+)/.exec(message)?.[1]);
			expect(suggested).toBeGreaterThanOrEqual(1);
			expect(suggested).toBeLessThan(items.length);
			const seen: string[] = [];
			let offset = "";
			do {
				const page = await small.inject({
					url: transfers(`limit=${suggested}&format=${format}${offset ? `&offset=${offset}` : ""}`),
					headers: AUTH,
				});
				expect(page.statusCode, page.body.slice(0, 300)).toBe(200);
				expect(page.rawPayload.length).toBeLessThanOrEqual(size - 1);
				const ids = idsOf(format, page);
				expect(ids.length).toBeGreaterThan(0);
				seen.push(...ids);
				offset =
					format === "json"
						? ((page.json() as { range: { next_offset: string | null } }).range.next_offset ?? "")
						: String(page.headers["x-next-offset"]);
			} while (offset !== "");
			expect(seen).toEqual(items.map((i) => i.id));
		});
	}

	it("a single item larger than the cap says that a lower limit cannot help", async () => {
		const app = await appWithCap(100);
		const res = await app.inject({ url: transfers("limit=1"), headers: AUTH });
		expect(res.statusCode).toBe(400);
		const body = res.json() as Record<string, string>;
		expect(body.code).toBe("RESPONSE_TOO_LARGE");
		expect(body.message).toMatch(/a single item is larger/);
		expect(body.message).toMatch(/--max-response-mb/);
	});

	it("every list route is capped", async () => {
		const app = await appWithCap(200);
		const a = f.work.accounts;
		const k = f.work.contracts;
		for (const path of [
			`address/${a.alice}/transfers?asset_type=native,ft,nft`,
			`address/${a.alice}/txs`,
			`contract/${k.token20}/transfers`,
			`events?contract=${k.token20}`,
			`events?contract=${k.token20}&format=ndjson`,
			`calls?from=${a.deployer}`,
			`contracts/creates?origin=${a.deployer}`,
			"blocks?block_number_start=0&block_number_end=latest",
			"blocks?block_number_start=0&block_number_end=latest&format=ndjson",
		]) {
			const res = await app.inject({ url: `/${f.chain}/v1/${path}`, headers: AUTH });
			expect(res.statusCode, path).toBe(400);
			expect(res.json().code, path).toBe("RESPONSE_TOO_LARGE");
		}
	});

	it("the default cap is 32 MiB, and ordinary pages pass under it", async () => {
		const app = await appWithCap(undefined);
		expect(app.maxResponseBytes).toBe(32 * 1024 * 1024);
		const res = await app.inject({ url: transfers("limit=1000"), headers: AUTH });
		expect(res.statusCode).toBe(200);
	});
});
