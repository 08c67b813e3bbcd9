/**
 * Hostile input in every query and path parameter of every endpoint (the routes and their
 * parameters as declared in src/api/routes/*.ts): SQL fragments, dataset placeholders, huge and
 * signed numbers, unicode, empty and 10k-character strings, repeated parameters, NUL bytes and
 * path traversal. Each answer must be a 4xx (400 for a bad query parameter), never a 5xx and
 * never a 200, carry exactly the error body of api-contract.md §3, and its message must not leak
 * SQL, the data folder's path or a stack trace.
 */
import { STATUS_CODES } from "node:http";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiFixture, AUTH, startApiOnWorkload } from "../helpers/api.js";

let f: ApiFixture;
let blockHash: string;
let txHash: string;

beforeAll(async () => {
	f = await startApiOnWorkload();
	blockHash = (await f.get(`/${f.chain}/v1/blocks/latest`)).body.hash as string;
	txHash = f.work.expected.oddLogTxHash;
});
afterAll(async () => {
	await f?.close();
});

const TEN_K = "x".repeat(10_000);

/** Values no parameter of the API accepts. */
const HOSTILE: [string, string][] = [
	["sql: or 1=1", "' OR 1=1 --"],
	["sql: or 1=1 after a valid address", `0x${"a".repeat(40)}' OR '1'='1`],
	["sql: stacked statement", "1; DROP TABLE x"],
	["sql: stacked statement after a number", "5; DROP TABLE transfers; --"],
	["sql: union", "0 UNION SELECT * FROM read_parquet('/etc/passwd')"],
	["bind parameter name", "$address"],
	["bind parameter name 2", "$start"],
	["dataset placeholder", "{transfers}"],
	["dataset placeholder 2", "{blocks}"],
	["read_parquet", "read_parquet('/etc/passwd')"],
	["huge number", "99999999999999999999999"],
	["huge negative number", "-99999999999999999999"],
	["float overflow", "1e309"],
	["NaN", "NaN"],
	["Infinity", "Infinity"],
	["hex number", "0x10"],
	["unicode", "ünïcödé ÄÖÜ ß"],
	["emoji", "😀🔥💥"],
	["right-to-left override", "\u202e0x1234"],
	["full-width digits", "１２３"],
	["empty string", ""],
	["whitespace", "   "],
	["10k characters", TEN_K],
	["NUL byte", "\u0000"],
	["NUL inside a value", "latest\u0000; DROP TABLE x"],
	["newline injection", "1\r\nX-Injected: yes"],
	["path traversal", "../../etc/passwd"],
	["json", '{"$gt":""}'],
	["html", "<script>alert(1)</script>"],
	["percent", "%"],
];

/** Path segments sent as is (already encoded): traversal attempts. */
const RAW_SEGMENTS = [
	"..%2f..%2fetc",
	"..%2F..%2F..%2Fetc%2Fpasswd",
	"eip155-1%2f..",
	"eip155-31337%2f..%2f..",
	"%2e%2e%2f%2e%2e%2fetc",
	"..%5c..%5cwindows",
	"%2e%2e",
	"eip155-31337%00",
	"0x%00",
	"%00",
];

const LIST = [
	"block_number_start",
	"block_number_end",
	"timestamp_start",
	"timestamp_end",
	"block_hash",
	"limit",
	"offset",
	"order",
	"format",
];

interface Route {
	name: string;
	/** Path template; `:name` segments are path parameters. */
	template: string;
	/** Valid path parameter values. */
	path: Record<string, string>;
	/** A valid query (200) that hostile values are put into. */
	base: Record<string, string>;
	/** Every query parameter the route declares. */
	params: string[];
}

function routes(): Route[] {
	const a = f.work.accounts;
	const k = f.work.contracts;
	const chain = { chain_id: f.chain };
	return [
		{
			name: "address transfers",
			template: "/:chain_id/v1/address/:address/transfers",
			path: { ...chain, address: a.alice },
			base: {},
			params: [...LIST, "direction", "origin", "counterparty", "asset_type", "contract"],
		},
		{
			name: "address txs",
			template: "/:chain_id/v1/address/:address/txs",
			path: { ...chain, address: a.alice },
			base: {},
			params: [...LIST, "direction", "counterparty", "include_logs"],
		},
		{
			name: "tx",
			template: "/:chain_id/v1/txs/:transaction_hash",
			path: { ...chain, transaction_hash: txHash },
			base: {},
			params: [],
		},
		{
			name: "tx logs",
			template: "/:chain_id/v1/txs/:transaction_hash/logs",
			path: { ...chain, transaction_hash: txHash },
			base: {},
			params: ["limit", "offset", "order", "format"],
		},
		{ name: "latest block", template: "/:chain_id/v1/blocks/latest", path: chain, base: {}, params: [] },
		{
			name: "block by hash",
			template: "/:chain_id/v1/blocks/:block_hash",
			path: { ...chain, block_hash: blockHash },
			base: {},
			params: [],
		},
		{
			name: "blocks",
			template: "/:chain_id/v1/blocks",
			path: chain,
			base: { block_number_start: "0", block_number_end: "latest" },
			params: LIST,
		},
		{
			name: "contracts/creates",
			template: "/:chain_id/v1/contracts/creates",
			path: chain,
			base: { origin: a.deployer },
			params: [...LIST, "origin", "caller", "sender", "contract"],
		},
		{
			name: "contracts/self-destructs",
			template: "/:chain_id/v1/contracts/self-destructs",
			path: chain,
			base: { origin: a.carol },
			params: [...LIST, "origin", "caller", "sender", "contract"],
		},
		{
			name: "contract transfers",
			template: "/:chain_id/v1/contract/:contract/transfers",
			path: { ...chain, contract: k.token20 },
			base: {},
			params: LIST,
		},
		{
			name: "events",
			template: "/:chain_id/v1/events",
			path: chain,
			base: { contract: k.token20 },
			params: [...LIST, "contract", "origin", "topic_0", "topic_1", "topic_2", "topic_3"],
		},
		{
			name: "calls",
			template: "/:chain_id/v1/calls",
			path: chain,
			base: { from: a.deployer },
			params: [...LIST, "from", "to", "origin", "call_type"],
		},
	];
}

/** A valid value of each query parameter (for the repeated-parameter cases). */
function validValue(route: Route, param: string): string {
	const a = f.work.accounts;
	const values: Record<string, string> = {
		block_number_start: "0",
		block_number_end: "latest",
		timestamp_start: "0",
		timestamp_end: "9999999999",
		block_hash: blockHash,
		limit: "1",
		offset: route.name === "blocks" ? blockHash : "0000000000000000-0000-00000000",
		order: "asc",
		format: "json",
		direction: "incoming",
		origin: a.alice,
		counterparty: a.bob,
		asset_type: "ft",
		contract: f.work.contracts.token20,
		include_logs: "true",
		caller: a.alice,
		sender: a.alice,
		topic_0: `0x${"00".repeat(32)}`,
		topic_1: `0x${"00".repeat(32)}`,
		topic_2: `0x${"00".repeat(32)}`,
		topic_3: `0x${"00".repeat(32)}`,
		from: a.alice,
		to: a.bob,
		call_type: "call",
	};
	const v = values[param];
	if (v === undefined) throw new Error(`no valid value for ${param}`);
	return v;
}

const enc = encodeURIComponent;

function pathOf(route: Route, overrides: Record<string, string> = {}, raw = false): string {
	return route.template.replace(/:([a-z_]+)/g, (_m, name: string) => {
		if (name in overrides) return raw ? (overrides[name] as string) : enc(overrides[name] as string);
		return route.path[name] as string;
	});
}

function queryOf(pairs: [string, string][]): string {
	return pairs.length ? `?${pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join("&")}` : "";
}

type Res = Awaited<ReturnType<ApiFixture["get"]>>;

/** Error phrases that do not match their status, collected over the whole file. */
const phraseMismatches: string[] = [];

/** What a message must never contain: the server's SQL, DuckDB's errors, paths, stacks. */
const LEAKS: [string, RegExp][] = [
	["SQL statement", /\bSELECT\b[\s\S]*\bFROM\b/i],
	["SQL clause", /\b(ORDER BY|BETWEEN \$|LIMIT \$|WHERE [a-z_]+ =)/i],
	["read_parquet", /read_parquet\s*\(/i],
	["parquet file", /\.parquet\b/i],
	["DuckDB", /duckdb/i],
	["DuckDB error", /\b(Binder|Parser|Catalog|Conversion|Invalid Input|Out of Range|Constraint|IO) Error\b/i],
	["JS error class", /\b(TypeError|RangeError|ReferenceError|SyntaxError)\b/],
	["stack frame", /\n\s*at\s|\bat\s+\S+\s+\(|\.(ts|js|mjs|cjs):\d+/],
	["node_modules", /node_modules/],
	["absolute path", /(^|[\s'"(])\/(tmp|work|home|root|var|usr|etc\/(?!passwd))\//],
];

/**
 * The error body, a 4xx, and a message free of leaks. Echoes of the client's own value (raw or
 * URL-encoded) are removed before looking for leaks: repeating the input is not a leak.
 */
function expectCleanError(res: Res, url: string, echoes: string[], statuses?: number[]) {
	const where = `${url.slice(0, 160)} → ${res.status} ${res.raw.slice(0, 240)}`;
	expect(res.status, where).toBeGreaterThanOrEqual(400);
	expect(res.status, where).toBeLessThan(500);
	if (statuses) expect(statuses, where).toContain(res.status);
	expect(String(res.headers["content-type"]), where).toMatch(/^application\/json/);
	expect(typeof res.body, where).toBe("object");
	expect(Object.keys(res.body).sort(), where).toEqual(["code", "error", "message", "statusCode"]);
	expect(res.body.statusCode, where).toBe(res.status);
	expect(typeof res.body.error, where).toBe("string");
	expect(typeof res.body.code, where).toBe("string");
	expect((res.body.code as string).length, where).toBeGreaterThan(0);
	expect(typeof res.body.message, where).toBe("string");
	expect((res.body.message as string).trim().length, where).toBeGreaterThan(0);
	if (res.body.error !== STATUS_CODES[res.status]) {
		phraseMismatches.push(`${url.slice(0, 100)}: ${res.status} with error "${res.body.error}"`);
	}

	expect(res.raw, where).not.toContain(f.dataDir);
	expect(res.raw, where).not.toContain(tmpdir());
	let message = res.body.message as string;
	const strip = [url, url.split("?")[0] as string, ...echoes.flatMap((e) => [e, enc(e)])].filter((s) => s.length > 0);
	for (const s of strip.sort((x, y) => y.length - x.length)) message = message.replaceAll(s, "<input>");
	for (const [leak, re] of LEAKS) expect(message, `${leak} in message: ${where}`).not.toMatch(re);
}

async function hit(url: string, echoes: string[], statuses?: number[]) {
	const res = await f.get(url);
	expectCleanError(res, url, echoes, statuses);
	return res;
}

describe("sanity", () => {
	it("every route answers 200 with its valid base request", async () => {
		for (const route of routes()) {
			const url = pathOf(route) + queryOf(Object.entries(route.base));
			const res = await f.get(url);
			expect(res.status, `${route.name}: ${res.raw.slice(0, 200)}`).toBe(200);
		}
	});
});

describe("hostile query parameter values", () => {
	for (const [what, value] of HOSTILE) {
		it(`${what}: 400 in every query parameter of every route`, async () => {
			let n = 0;
			for (const route of routes()) {
				for (const param of route.params) {
					const pairs = Object.entries({ ...route.base, [param]: value });
					const url = pathOf(route) + queryOf(pairs);
					await hit(url, [value], [400]);
					n++;
				}
			}
			expect(n).toBeGreaterThan(100);
		});
	}

	it("a hostile value next to valid ones (range, limit, order) is still refused", async () => {
		for (const route of routes()) {
			for (const param of route.params) {
				for (const [, value] of HOSTILE.slice(0, 10)) {
					const valid: Record<string, string> = { limit: "5", order: "desc" };
					const pairs = Object.entries({ ...route.base, ...valid, [param]: value }).filter(
						([k]) => route.params.includes(k) || k in route.base,
					);
					await hit(pathOf(route) + queryOf(pairs), [value], [400]);
				}
			}
		}
	});
});

describe("repeated query parameters", () => {
	it("?p=v&p=v (v valid) → 400 for every parameter of every route", async () => {
		for (const route of routes()) {
			for (const param of route.params) {
				const v = validValue(route, param);
				const pairs: [string, string][] = [
					...Object.entries(route.base).filter(([k]) => k !== param),
					[param, v],
					[param, v],
				];
				const url = pathOf(route) + queryOf(pairs);
				const res = await hit(url, [v], [400]);
				expect(res.body.message, url).toContain(param);
			}
		}
	});

	it("?limit=1&limit=2 and ?order=asc&order=desc → 400", async () => {
		const p = `/${f.chain}/v1/address/${f.work.accounts.alice}/txs`;
		await hit(`${p}?limit=1&limit=2`, [], [400]);
		await hit(`${p}?order=asc&order=desc`, [], [400]);
		await hit(`${p}?limit=1&limit=1&limit=1&limit=1`, [], [400]);
	});
});

describe("hostile parameter names", () => {
	const names = [
		"' OR 1=1 --",
		"1; DROP TABLE x",
		"$address",
		"{transfers}",
		"read_parquet('/etc/passwd')",
		"__proto__",
		"constructor",
		"prototype",
		"toString",
		"hasOwnProperty",
		"__proto__[limit]",
		"limit[]",
		"limit[0]",
		"\u0000",
		"😀",
		TEN_K,
		"LIMIT",
		" limit",
	];
	it("are unknown parameters: 400 on every route", async () => {
		for (const route of routes()) {
			for (const name of names) {
				const pairs: [string, string][] = [...Object.entries(route.base), [name, "1"]];
				await hit(pathOf(route) + queryOf(pairs), [name], [400]);
			}
		}
	});

	it("a raw __proto__ query does not change what the app accepts", async () => {
		const p = `/${f.chain}/v1/address/${f.work.accounts.alice}/txs`;
		await hit(`${p}?__proto__[limit]=5000`, [], [400]);
		await hit(`${p}?__proto__.limit=0`, [], [400]);
		// And afterwards the app still validates limit normally.
		await hit(`${p}?limit=5000`, [], [400]);
		expect((await f.get(`${p}?limit=5`)).status).toBe(200);
	});
});

describe("hostile path parameters", () => {
	it("every hostile value in every path parameter → 4xx", async () => {
		let n = 0;
		for (const route of routes()) {
			for (const name of Object.keys(route.path)) {
				for (const [, value] of HOSTILE) {
					const url = pathOf(route, { [name]: value }) + queryOf(Object.entries(route.base));
					// 400 for a bad value; 404 when the value changes the route (empty segment);
					// 414 when it is too long for a path parameter.
					await hit(url, [value], [400, 404, 414]);
					n++;
				}
			}
		}
		expect(n).toBeGreaterThan(300);
	});

	it("traversal segments (%2f, %2e, %5c, %00) in every path parameter → 4xx", async () => {
		for (const route of routes()) {
			for (const name of Object.keys(route.path)) {
				for (const seg of RAW_SEGMENTS) {
					const url = pathOf(route, { [name]: seg }, true) + queryOf(Object.entries(route.base));
					await hit(url, [seg, decodeURIComponent(seg)], [400, 404]);
				}
			}
		}
	});

	it("literal .. segments never reach a file", async () => {
		const v1 = `/${f.chain}/v1`;
		for (const url of [
			`${v1}/address/../../../../etc/passwd/txs`,
			`${v1}/txs/../../../etc/passwd`,
			`${v1}/blocks/..`,
			`/../../etc/passwd`,
			`/${f.chain}/../../../etc/passwd`,
			`${v1}/address/${f.work.accounts.alice}/transfers/../../../../_keys.json`,
		]) {
			const res = await f.get(url);
			expectCleanError(res, url, []);
			expect(res.raw).not.toMatch(/root:|"hash"/);
		}
	});

	it("the chain id segment with traversal: ..%2f..%2fetc and eip155-1%2f.. → 400", async () => {
		await hit(`/..%2f..%2fetc/v1/blocks/latest`, [], [400]);
		await hit(`/eip155-1%2f../v1/blocks/latest`, [], [400]);
		await hit(`/eip155-31337%2f..%2f..%2f_keys.json/v1/blocks/latest`, [], [400]);
	});
});

describe("valid formats, extreme values: never a 5xx", () => {
	it("range and paging extremes within the accepted formats answer 200 or 400", async () => {
		const extremes: Record<string, string>[] = [
			{ block_number_start: "-999999999999999", block_number_end: "latest" },
			{ block_number_start: "0", block_number_end: "999999999999999" },
			{ block_number_start: "999999999999999", block_number_end: "latest" },
			{ block_number_start: "999999999999998", block_number_end: "999999999999999" },
			{ block_number_start: "-999999999999999", block_number_end: "-999999999999998" },
			{ block_number_start: "0", block_number_end: "-999999999999999" },
			{ timestamp_start: "0", timestamp_end: "999999999999" },
			{ timestamp_start: "999999999998", timestamp_end: "999999999999" },
			{ block_number_start: "0", block_number_end: "latest", limit: "1000", order: "desc" },
			{ limit: "0001" },
			{ limit: "1000", offset: "ffffffffffffffff-ffff-ffffffff" },
			{ limit: "1000", offset: "0000000000000000-0000-00000000", order: "desc" },
		];
		for (const route of routes()) {
			for (const extra of extremes) {
				const q = { ...route.base, ...extra };
				if (Object.keys(extra).some((k) => !route.params.includes(k))) continue;
				if (route.name === "blocks" && q.offset) q.offset = blockHash;
				if (route.name === "blocks" && !q.block_number_start && !q.timestamp_start) {
					Object.assign(q, { block_number_start: "0", block_number_end: "latest" });
				}
				const url = pathOf(route) + queryOf(Object.entries(q));
				const res = await f.get(url);
				expect([200, 400], `${url}: ${res.raw.slice(0, 200)}`).toContain(res.status);
				if (res.status === 200) expect(Array.isArray(res.body.items), url).toBe(true);
				else expectCleanError(res, url, []);
			}
		}
	});

	it("errors stay JSON whatever the Accept header asks for", async () => {
		const url = `/${f.chain}/v1/address/${f.work.accounts.alice}/txs?limit=${enc("' OR 1=1 --")}`;
		for (const accept of ["text/csv", "application/x-ndjson", "application/vnd.apache.arrow.stream", "text/html"]) {
			const res = await f.get(url, { ...AUTH, accept });
			expectCleanError(res, url, ["' OR 1=1 --"], [400]);
		}
	});
});

describe("error phrase", () => {
	it("`error` is the reason phrase of the status, in every error above and for a too-long path parameter", async () => {
		// Self-contained part: a 10k-character address in the path.
		const url = `/${f.chain}/v1/address/${TEN_K}/txs`;
		expectCleanError(await f.get(url), url, [TEN_K]);
		expect([...new Set(phraseMismatches)].slice(0, 20)).toEqual([]);
	});
});
