import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiFixture, startApiOnWorkload } from "../helpers/api.js";

/** The OpenAPI document and the docs page: generated from the route schemas, no key needed. */
let f: ApiFixture;
beforeAll(async () => {
	f = await startApiOnWorkload();
});
afterAll(async () => {
	await f?.close();
});

describe("OpenAPI and /docs", () => {
	it("documents every endpoint with its parameters and an example", async () => {
		const r = await f.get("/openapi.json", {});
		expect(r.status).toBe(200);
		const paths = r.body.paths as Record<string, { get: { parameters?: { name: string }[]; description?: string } }>;
		// The SQL endpoint is a POST of ours, checked below.
		const data = Object.keys(paths).filter((p) => p.startsWith("/{chain_id}/v1/") && p !== "/{chain_id}/v1/sql");
		const sql = (r.body.paths as Record<string, { post?: { description?: string } }>)["/{chain_id}/v1/sql"];
		expect(sql?.post?.description).toMatch(/Example: curl -X POST .*\/eip155-1\/v1\/sql/);
		expect(data.sort()).toEqual(
			[
				"address/{address}/transfers",
				"address/{address}/txs",
				"txs/{transaction_hash}",
				"txs/{transaction_hash}/logs",
				"blocks/latest",
				"blocks/{block_hash}",
				"blocks",
				"contracts/creates",
				"contracts/self-destructs",
				"contract/{contract}/transfers",
				"events",
				"csv-exports/events",
				"calls",
			]
				.map((p) => `/{chain_id}/v1/${p}`)
				.sort(),
		);
		for (const p of data) {
			expect(paths[p]?.get.description, p).toMatch(/Example: \/eip155-1\/v1\//);
		}
		const transfers = paths["/{chain_id}/v1/address/{address}/transfers"]?.get.parameters?.map((x) => x.name) ?? [];
		expect(transfers).toEqual(
			expect.arrayContaining(["asset_type", "direction", "contract", "block_number_start", "limit", "offset"]),
		);
	});

	it("serves the docs page and its assets", async () => {
		const page = await f.app.inject({ url: "/docs/" });
		expect(page.statusCode).toBe(200);
		expect(page.headers["content-type"]).toContain("text/html");
		const bundle = await f.app.inject({ url: "/docs/static/swagger-ui-bundle.js" });
		expect(bundle.statusCode).toBe(200);
		expect(bundle.body.length).toBeGreaterThan(100_000);
	});
});
