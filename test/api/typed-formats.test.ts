/**
 * CSV and Arrow answers of every list route, on the real app over a backfilled anvil workload:
 * each Arrow column has the type its kind declares (api/list-columns.ts: Int64 numbers, Bool
 * booleans, Utf8 text and JSON, Float64 prices) and holds the JSON answer's values; an empty page
 * has the same schema as a full one, and an empty CSV page its header row.
 */
import { type DataType, Type, tableFromIPC } from "apache-arrow";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { columnKind, flattenItem, isDeclared } from "../../src/api/answers/list-columns.js";
import { stringifyExact } from "../../src/api/answers/records.js";
import type { ColumnKind } from "../../src/query/sql/result-columns.js";
import { type ApiFixture, AUTH, startApiOnWorkload } from "../helpers/api.js";

let f: ApiFixture;
beforeAll(async () => {
	f = await startApiOnWorkload();
});
afterAll(async () => {
	await f?.close();
});

const NOBODY = "0x00000000000000000000000000000000000000a1";

/** Each list route: a page with items, and one of the same route with none. */
function routes(): [string, string, string][] {
	const c = f.chain;
	const { alice } = f.work.accounts;
	const { token20, token721, token1155, factory, selfDestructor } = f.work.contracts;
	return [
		[
			"/:chain_id/v1/blocks",
			`/${c}/v1/blocks?block_number_start=0&block_number_end=latest&limit=50`,
			`/${c}/v1/blocks?timestamp_start=0&timestamp_end=1`,
		],
		[
			"/:chain_id/v1/address/:address/transfers",
			`/${c}/v1/address/${alice}/transfers?asset_type=native,ft,nft&limit=100`,
			`/${c}/v1/address/${NOBODY}/transfers?asset_type=native,ft,nft`,
		],
		["/:chain_id/v1/address/:address/txs", `/${c}/v1/address/${alice}/txs?limit=100`, `/${c}/v1/address/${NOBODY}/txs`],
		[
			"/:chain_id/v1/address/:address/txs (include_logs)",
			`/${c}/v1/address/${alice}/txs?limit=100&include_logs=true`,
			`/${c}/v1/address/${NOBODY}/txs?include_logs=true`,
		],
		[
			"/:chain_id/v1/contract/:contract/transfers",
			`/${c}/v1/contract/${token20}/transfers?asset_type=ft`,
			`/${c}/v1/contract/${NOBODY}/transfers?asset_type=ft`,
		],
		["/:chain_id/v1/events", `/${c}/v1/events?contract=${token20}`, `/${c}/v1/events?contract=${NOBODY}`],
		["/:chain_id/v1/calls", `/${c}/v1/calls?origin=${alice}`, `/${c}/v1/calls?origin=${NOBODY}`],
		[
			"/:chain_id/v1/contracts/creates",
			`/${c}/v1/contracts/creates?caller=${factory}`,
			`/${c}/v1/contracts/creates?caller=${NOBODY}`,
		],
		[
			"/:chain_id/v1/contracts/self-destructs",
			`/${c}/v1/contracts/self-destructs?contract=${selfDestructor}`,
			`/${c}/v1/contracts/self-destructs?contract=${NOBODY}`,
		],
		[
			"/balances/:chain_id/v1/addresses/:address/tokens",
			`/balances/${c}/v1/addresses/${alice}/tokens`,
			`/balances/${c}/v1/addresses/${NOBODY}/tokens`,
		],
		[
			"/balances/:chain_id/v1/tokens/:contract/holders",
			`/balances/${c}/v1/tokens/${token20}/holders`,
			`/balances/${c}/v1/tokens/${NOBODY}/holders`,
		],
		["/nft/:chain_id/v1/:address/inventory", `/nft/${c}/v1/${alice}/inventory`, `/nft/${c}/v1/${NOBODY}/inventory`],
		["/nft/:chain_id/v1/:address/owner", `/nft/${c}/v1/${token721}/owner`, `/nft/${c}/v1/${NOBODY}/owner`],
		["/nft/:chain_id/v1/:address/history", `/nft/${c}/v1/${alice}/history`, `/nft/${c}/v1/${NOBODY}/history`],
		[
			"/nft/:chain_id/v1/:address/:token_id/history",
			`/nft/${c}/v1/${token1155}/1/history`,
			`/nft/${c}/v1/${token1155}/999999/history`,
		],
	];
}

const EXPECTED: Record<ColumnKind, Type> = {
	int: Type.Int,
	uint64: Type.Int,
	bool: Type.Bool,
	float: Type.Float,
	text: Type.Utf8,
	json: Type.Utf8,
};

const withFormat = (url: string, format: string) => `${url}${url.includes("?") ? "&" : "?"}format=${format}`;

async function get(url: string) {
	const res = await f.app.inject({ method: "GET", url, headers: AUTH });
	expect(res.statusCode, `${url}: ${res.body.slice(0, 300)}`).toBe(200);
	return res;
}

/** What the Arrow cell of a JSON value of this kind reads back as. */
function arrowOf(kind: ColumnKind, v: unknown): unknown {
	if (v == null) return null;
	if (kind === "int" || kind === "uint64") return BigInt(v as number);
	if (kind === "text" || kind === "json") return typeof v === "string" ? v : stringifyExact(v);
	return v;
}

describe("typed CSV and Arrow answers", () => {
	it("every list route with a format parameter is covered here", async () => {
		const spec = (await f.app.inject({ url: "/openapi.json" })).json() as {
			paths: Record<string, { get?: { parameters?: { name: string; in: string }[] } }>;
		};
		const listed = Object.entries(spec.paths)
			.filter(([, p]) => p.get?.parameters?.some((x) => x.name === "format" && x.in === "query"))
			.map(([path]) => path.replace(/\{(\w+)\}/g, ":$1"));
		const covered = new Set(routes().map(([route]) => route.replace(/ \(.*\)$/, "")));
		expect(listed.filter((p) => !covered.has(p))).toEqual([]);
		expect(listed.length).toBeGreaterThanOrEqual(14);
	});

	for (const i of Array.from({ length: 15 }, (_, k) => k))
		it(`route ${i}: Arrow types by kind, values as in JSON; an empty page keeps the schema; CSV has its header`, async () => {
			const [route, full, empty] = routes()[i] as [string, string, string];
			const json = (await get(full)).json() as { items: object[] };
			expect(json.items.length, `${route}: the full page has items`).toBeGreaterThan(0);
			const rows = json.items.map((item) => flattenItem(item));
			const table = tableFromIPC((await get(withFormat(full, "arrow"))).rawPayload);
			expect(table.numRows).toBe(rows.length);
			const names = table.schema.fields.map((x) => x.name);
			// Every field of the JSON answer is a column, and every column has a declared kind.
			for (const r of rows) for (const k of Object.keys(r)) expect(names, route).toContain(k);
			expect(
				names.filter((n) => !isDeclared(n)),
				`${route}: columns without a declared kind`,
			).toEqual([]);
			for (const field of table.schema.fields) {
				const kind = columnKind(field.name);
				const type = field.type as DataType;
				expect(type.typeId, `${route} ${field.name}`).toBe(EXPECTED[kind]);
				if (kind === "int") expect((type as unknown as { bitWidth: number; isSigned: boolean }).isSigned).toBe(true);
				if (kind === "uint64") expect((type as unknown as { isSigned: boolean }).isSigned).toBe(false);
				const column = table.getChild(field.name);
				rows.forEach((r, k) => {
					expect(column?.get(k), `${route} row ${k} ${field.name}`).toEqual(arrowOf(kind, r[field.name]));
				});
			}

			const none = tableFromIPC((await get(withFormat(empty, "arrow"))).rawPayload);
			expect(none.numRows, `${route}: the empty page is empty`).toBe(0);
			expect(none.schema.fields.map((x) => [x.name, x.type.typeId])).toEqual(
				table.schema.fields.map((x) => [x.name, x.type.typeId]),
			);
			const csvFull = (await get(withFormat(full, "csv"))).body.split("\n")[0];
			const csvEmpty = (await get(withFormat(empty, "csv"))).body;
			expect(csvFull).toBe(names.join(","));
			expect(csvEmpty).toBe(`${names.join(",")}\n`);
		});
});
