import { createJsonSchemaTransform } from "fastify-type-provider-zod";
import type { z } from "zod";

/*
 * What the OpenAPI document (/openapi.json, rendered at /docs) says about each query and path
 * parameter. Every parameter arrives as a string, so its zod schema (params.ts, the routes) parses
 * a string: generated from that schema, `limit` would be "a string matching ^-?\d+$" and
 * `include_logs` "one of the strings true, false". A documented schema says instead what the string
 * stands for (an integer from 1 to 1000, a boolean), with a description and an example; the zod
 * schema still does all the parsing and writes every error message.
 */

/** An OpenAPI 3.0 Schema Object: the value a parameter stands for. */
export type OpenApiSchema = Record<string, unknown>;

export interface ParamDoc {
	/** Type, bounds, pattern, enum, default: what the parameter's value is. */
	schema: OpenApiSchema;
	/** What the parameter does on its route; Markdown, as swagger-ui renders it. */
	description: string;
	/** A value it takes. */
	example: unknown;
}

const docs = new WeakMap<z.core.$ZodType, ParamDoc>();

/**
 * A copy of `schema` that parses exactly as it does and is documented by `doc`. A copy, so one
 * parser (an address) can be documented differently on each route that takes it (origin,
 * counterparty, a path's address).
 */
export function documented<T extends z.ZodType>(schema: T, doc: ParamDoc): T {
	const copy = schema.clone();
	docs.set(copy, doc);
	return copy;
}

/**
 * `schema` documented as it already is, but with this route's description; `more` replaces the
 * example and adds to the schema (a default this route has).
 */
export function describedAs<T extends z.ZodType>(
	schema: T,
	description: string,
	more: { example?: unknown; schema?: OpenApiSchema } = {},
): T {
	const doc = docs.get(schema);
	if (!doc)
		throw new Error("describedAs: the schema is not documented yet (give it its documentation with documented)");
	return documented(schema, {
		schema: { ...doc.schema, ...more.schema },
		description,
		example: "example" in more ? more.example : doc.example,
	});
}

/**
 * Runs on every node of a route's schema as zod turns it into JSON Schema, after the node's inner
 * schemas (an `.optional()` inherits what its documented inner schema became). A documented node's
 * generated schema (a string and its regex) is replaced in place by its documentation.
 * It takes the place of fastify-type-provider-zod's default override, which only rewrites unions
 * with null and dates: no parameter is either, and no route has a zod body or response schema.
 */
function applyParamDocs(ctx: { zodSchema: z.core.$ZodType; jsonSchema: OpenApiSchema }) {
	const doc = docs.get(ctx.zodSchema);
	if (!doc) return;
	for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
	Object.assign(ctx.jsonSchema, structuredClone(doc.schema), { description: doc.description, example: doc.example });
}

const zodTransform = createJsonSchemaTransform({ zodToJsonConfig: { override: applyParamDocs } });

/**
 * The `transform` of @fastify/swagger: the routes' zod schemas as documented parameters, then two
 * changes to the query string that only the document needs:
 * - A query parameter's example goes into its description, not its `example`: swagger-ui fills
 *   "Try it out" with every example and sends them all, and the range forms exclude each other
 *   (block numbers, timestamps, block_hash: api-contract.md §4), so that first request would be a
 *   400. A path parameter is required anyway, and keeps its `example` (the filled-in value).
 * - A list parameter (`contract=0xa,0xb`) is comma-separated, OpenAPI's style form without
 *   explode; its default (explode) is the parameter repeated, which the API refuses. @fastify/swagger
 *   takes style and explode from the query string's schema for all its parameters; for a single
 *   value, form without explode is the same `name=value` as the default.
 */
export const paramDocsTransform: typeof zodTransform = (route) => {
	const out = zodTransform(route);
	const query = (out.schema as { querystring?: { properties?: Record<string, OpenApiSchema> } & OpenApiSchema })
		.querystring;
	for (const property of Object.values(query?.properties ?? {})) {
		if (property.example === undefined) continue;
		property.description = `${property.description ?? ""} Example: \`${exampleText(property.example)}\`.`.trim();
		delete property.example;
	}
	if (query && Object.values(query.properties ?? {}).some((p) => p.type === "array")) {
		query.style = "form";
		query.explode = false;
	}
	return out;
};

/** An example as it is written in a URL: a list comma-separated. */
function exampleText(example: unknown): string {
	return Array.isArray(example) ? example.join(",") : String(example);
}
