import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiFixture, AUTH, startApiOnWorkload } from "../helpers/api.js";

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
		// The SQL endpoint and the webhooks are ours, with POSTs, checked below.
		const data = Object.keys(paths).filter(
			(p) => p.startsWith("/{chain_id}/v1/") && p !== "/{chain_id}/v1/sql" && !p.startsWith("/{chain_id}/v1/hooks"),
		);
		const sql = (r.body.paths as Record<string, { post?: { description?: string } }>)["/{chain_id}/v1/sql"];
		expect(sql?.post?.description).toMatch(/Example: curl -X POST .*\/eip155-1\/v1\/sql/);
		const hooks = r.body.paths as Record<string, Record<string, { description?: string }>>;
		expect(Object.keys(hooks).filter((p) => p.startsWith("/{chain_id}/v1/hooks"))).toEqual([
			"/{chain_id}/v1/hooks",
			"/{chain_id}/v1/hooks/{hook_id}",
			"/{chain_id}/v1/hooks/{hook_id}/replay",
		]);
		expect(hooks["/{chain_id}/v1/hooks"]?.post?.description).toMatch(/Example: curl -X POST .*\/eip155-1\/v1\/hooks/);
		expect(Object.keys(hooks["/{chain_id}/v1/hooks/{hook_id}"] ?? {}).sort()).toEqual(["delete", "get"]);
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

	it("types every parameter, describes it and gives an example", async () => {
		const ops = await operations();
		let count = 0;
		for (const { where, parameters } of ops) {
			for (const p of parameters) {
				const at = `${where} ${p.in} ${p.name}`;
				expect(p.description, at).toMatch(/\w{3}/);
				// Typed: a type, or (a block number) a choice of typed schemas; a string says its form.
				const branches = p.schema.anyOf ?? [p.schema];
				for (const b of branches) expect(b.type, at).toMatch(/^(string|integer|boolean|array)$/);
				if (p.schema.type === "string")
					expect(p.schema.pattern ?? p.schema.enum ?? p.schema.maxLength, at).toBeDefined();
				// A path parameter's example fills "Try it out"; a query parameter's is in its description.
				expect(example(p), at).toBeDefined();
				count++;
			}
		}
		expect(count).toBeGreaterThan(200);

		const param = (path: string, name: string) => {
			const found = ops.find((o) => o.where === `GET ${path}`)?.parameters.find((p) => p.name === name);
			if (!found) throw new Error(`no parameter ${name} on GET ${path}`);
			return found;
		};
		const transfers = "/{chain_id}/v1/address/{address}/transfers";
		expect(param(transfers, "limit").schema).toEqual({ type: "integer", minimum: 1, maximum: 1000, default: 100 });
		expect(param(transfers, "timestamp_start").schema).toMatchObject({ type: "integer", minimum: 0 });
		expect(param(transfers, "block_number_start").schema.anyOf).toEqual([
			expect.objectContaining({ type: "integer" }),
			{ type: "string", enum: ["latest"] },
		]);
		expect(param(transfers, "order").schema).toMatchObject({ type: "string", enum: ["asc", "desc"] });
		expect(param(transfers, "direction").schema.enum).toEqual(["incoming", "outgoing"]);
		expect(param(transfers, "address").schema).toMatchObject({ type: "string", pattern: "^0x[0-9a-fA-F]{40}$" });
		expect(param("/{chain_id}/v1/address/{address}/txs", "include_logs").schema.type).toBe("boolean");
		// A list is comma-separated: OpenAPI's form style without explode, not the parameter repeated.
		const topics = param("/{chain_id}/v1/events", "topic_0");
		expect(topics.schema).toMatchObject({ type: "array", maxItems: 20, items: { pattern: "^0x[0-9a-fA-F]{64}$" } });
		expect(topics).toMatchObject({ style: "form", explode: false });
	});

	it("takes every example of the document, and refuses just past each of its bounds", async () => {
		let checked = 0;
		for (const { method, path, parameters } of await operations()) {
			if (parameters.length === 0) continue;
			const url = (name: string, value: string) => {
				const filled = path.replace(/\{(\w+)\}/g, (_, p: string) =>
					p === "chain_id" ? f.chain : String(example(parameters.find((x) => x.name === p) as Parameter)),
				);
				return name.length > 0 ? `${filled}?${name}=${encodeURIComponent(value)}` : filled;
			};
			const call = async (name: string, value: string) => {
				const r = await f.app.inject({
					method: method.toUpperCase() as "GET" | "POST" | "DELETE",
					url: url(name, value),
					headers: { ...AUTH, "content-type": "text/plain" },
					payload: method === "post" ? "SELECT 1" : undefined,
				});
				checked++;
				// Errors are JSON; a 200 may be CSV or Arrow (format=).
				return {
					status: r.statusCode,
					body: (r.statusCode >= 400 ? r.json() : {}) as { code?: string; message?: string },
				};
			};
			// Other 400s (no range on /blocks, no filter on /events, a webhook's JSON body) are about what else is missing.
			const taken = async (name: string, value: string) => {
				const r = await call(name, value);
				expect(
					r.status === 400 && r.body.code === "INVALID_PARAMETER" && !r.body.message?.startsWith("body: "),
					`${method} ${url(name, value)}: ${r.body.message}`,
				).toBe(false);
			};
			const refused = async (name: string, value: string) => {
				const r = await call(name, value);
				expect(r, `${method} ${url(name, value)}`).toMatchObject({
					status: 400,
					body: { code: "INVALID_PARAMETER", message: expect.stringMatching(new RegExp(`^${name}: `)) },
				});
			};
			await taken("", "");
			for (const p of parameters.filter((x) => x.in === "query")) {
				await taken(p.name, String(example(p)));
				const s = p.schema.anyOf?.[0] ?? p.schema;
				if (s.minimum !== undefined) {
					await taken(p.name, String(s.minimum));
					await refused(p.name, String(s.minimum - 1));
				}
				if (s.maximum !== undefined) {
					await taken(p.name, String(s.maximum));
					await refused(p.name, String(s.maximum + 1));
				}
				for (const v of s.enum ?? []) await taken(p.name, String(v));
				if (s.type === "boolean") for (const v of ["true", "false"]) await taken(p.name, v);
				if (s.maxLength !== undefined) {
					await taken(p.name, "0".repeat(s.maxLength));
					await refused(p.name, "0".repeat(s.maxLength + 1));
				}
				if (s.maxItems !== undefined) {
					const item = String((example(p) as unknown[])[0]);
					await taken(p.name, Array(s.maxItems).fill(item).join(","));
					await refused(
						p.name,
						Array(s.maxItems + 1)
							.fill(item)
							.join(","),
					);
				}
			}
		}
		expect(checked).toBeGreaterThan(400);
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

interface Schema {
	type?: string;
	anyOf?: Schema[];
	enum?: unknown[];
	pattern?: string;
	minimum?: number;
	maximum?: number;
	maxLength?: number;
	maxItems?: number;
	example?: unknown;
}
interface Parameter {
	name: string;
	in: "query" | "path";
	description?: string;
	schema: Schema;
	style?: string;
	explode?: boolean;
}

/** Every operation of /openapi.json, with its parameters. */
async function operations() {
	const r = await f.get("/openapi.json", {});
	const paths = r.body.paths as Record<string, Record<string, { parameters?: Parameter[] }>>;
	return Object.entries(paths).flatMap(([path, methods]) =>
		Object.entries(methods).map(([method, op]) => ({
			method,
			path,
			where: `${method.toUpperCase()} ${path}`,
			parameters: op.parameters ?? [],
		})),
	);
}

/** A parameter's example: a path one's in its schema, a query one's at the end of its description. */
function example(p: Parameter): unknown {
	if (p.in === "path") return p.schema.example;
	const written = p.description?.match(/Example: `([^`]+)`\.$/)?.[1];
	return p.schema.type === "array" ? written?.split(",") : written;
}
