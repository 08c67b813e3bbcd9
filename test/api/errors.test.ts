/**
 * Every 400/401/404 of api-contract.md §2–§4, §5 and §7 against the real app over a backfilled
 * anvil workload: each error answers with exactly `{statusCode, error, code, message}` (status
 * equal to statusCode, a non-empty message), never inside a 200. 401s carry
 * `WWW-Authenticate: Bearer`; health, readiness, the OpenAPI document and /docs need no key.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiFixture, AUTH, startApiOnWorkload, TEST_KEY } from "../helpers/api.js";

let f: ApiFixture;
let v1: string;
/** A block hash and a tx hash of the workload (for well-formed, existing values). */
let blockHash: string;
let txHash: string;

beforeAll(async () => {
	f = await startApiOnWorkload();
	v1 = `/${f.chain}/v1`;
	const latest = await f.get(`${v1}/blocks/latest`);
	blockHash = latest.body.hash as string;
	txHash = f.work.expected.oddLogTxHash;
});
afterAll(async () => {
	await f?.close();
});

type Res = Awaited<ReturnType<ApiFixture["get"]>>;

/** The error body of api-contract.md §3, with the expected status (and code, when given). */
function expectError(res: Res, status: number, code?: string) {
	const where = `${res.status} ${res.raw.slice(0, 300)}`;
	expect(res.status, where).toBe(status);
	expect(String(res.headers["content-type"]), where).toMatch(/^application\/json/);
	expect(typeof res.body, where).toBe("object");
	expect(Object.keys(res.body).sort(), where).toEqual(["code", "error", "message", "statusCode"]);
	expect(res.body.statusCode, where).toBe(status);
	expect(typeof res.body.error, where).toBe("string");
	expect((res.body.error as string).length, where).toBeGreaterThan(0);
	expect(typeof res.body.code, where).toBe("string");
	expect(res.body.code as string, where).toMatch(/^[A-Z][A-Z0-9_]*$/);
	expect(typeof res.body.message, where).toBe("string");
	expect((res.body.message as string).trim().length, where).toBeGreaterThan(0);
	if (code) expect(res.body.code, where).toBe(code);
}

/** Every list endpoint that takes a range, with filters that make the request otherwise valid. */
function rangeEndpoints(): { name: string; path: string; base: string }[] {
	const a = f.work.accounts;
	const k = f.work.contracts;
	return [
		{ name: "address transfers", path: `${v1}/address/${a.alice}/transfers`, base: "" },
		{ name: "address txs", path: `${v1}/address/${a.alice}/txs`, base: "" },
		{ name: "contract transfers", path: `${v1}/contract/${k.token20}/transfers`, base: "" },
		{ name: "events", path: `${v1}/events`, base: `contract=${k.token20}` },
		{ name: "calls", path: `${v1}/calls`, base: `from=${a.deployer}` },
		{ name: "contracts/creates", path: `${v1}/contracts/creates`, base: `origin=${a.deployer}` },
		{ name: "contracts/self-destructs", path: `${v1}/contracts/self-destructs`, base: `origin=${a.carol}` },
		{ name: "blocks", path: `${v1}/blocks`, base: "block_number_start=0&block_number_end=latest" },
	];
}

/** Every list endpoint, for limit and offset checks. (/txs/{hash}/logs answers a transaction
 * with its logs, as the official clients read it, so it takes no paging parameters.) */
function listEndpoints() {
	return rangeEndpoints();
}

const url = (path: string, ...qs: string[]) => {
	const q = qs.filter(Boolean).join("&");
	return q ? `${path}?${q}` : path;
};

describe("sanity: the valid requests the error cases are built from", () => {
	it("answer 200", async () => {
		for (const e of listEndpoints()) {
			const res = await f.get(url(e.path, e.base));
			expect(res.status, `${e.name}: ${res.raw.slice(0, 200)}`).toBe(200);
			expect(Array.isArray(res.body.items)).toBe(true);
		}
	});
});

describe("400: ranges (§4)", () => {
	const bad: [string, string][] = [
		["numbers + timestamps", "block_number_start=0&block_number_end=latest&timestamp_start=0&timestamp_end=9999999999"],
		["numbers + block_hash", "block_number_start=0&block_number_end=latest&block_hash=HASH"],
		["timestamps + block_hash", "timestamp_start=0&timestamp_end=9999999999&block_hash=HASH"],
		["all three forms", "block_number_start=0&block_number_end=5&timestamp_start=0&timestamp_end=1&block_hash=HASH"],
		["half a pair: block_number_start", "block_number_start=0"],
		["half a pair: block_number_end", "block_number_end=latest"],
		["half a pair: timestamp_start", "timestamp_start=0"],
		["half a pair: timestamp_end", "timestamp_end=9999999999"],
		["half of each pair", "block_number_start=0&timestamp_end=9999999999"],
		["block numbers: start after end", "block_number_start=9&block_number_end=5"],
		["block numbers: latest before a number", "block_number_start=latest&block_number_end=5"],
		["block numbers: negative start after negative end", "block_number_start=-1&block_number_end=-5"],
		["timestamps: start after end", "timestamp_start=200&timestamp_end=100"],
		[
			"block numbers: the whole range before genesis",
			"block_number_start=-999999999999999&block_number_end=-999999999999998",
		],
		["block numbers: the end before genesis", "block_number_start=0&block_number_end=-999999999999999"],
	];
	for (const [what, qs] of bad) {
		it(`${what} → 400 INVALID_RANGE on every range endpoint`, async () => {
			for (const e of rangeEndpoints()) {
				// /blocks needs a range; its base is one, so replace it rather than add a second.
				const base = e.name === "blocks" ? "" : e.base;
				const res = await f.get(url(e.path, base, qs.replaceAll("HASH", blockHash)));
				expectError(res, 400, "INVALID_RANGE");
			}
		});
	}

	it("start after end: the message names both values", async () => {
		const res = await f.get(`${v1}/blocks?block_number_start=9&block_number_end=5`);
		expectError(res, 400, "INVALID_RANGE");
		expect(res.body.message).toContain("9");
		expect(res.body.message).toContain("5");
		const ts = await f.get(`${v1}/address/${f.work.accounts.alice}/txs?timestamp_start=200&timestamp_end=100`);
		expectError(ts, 400, "INVALID_RANGE");
		expect(ts.body.message).toContain("200");
		expect(ts.body.message).toContain("100");
	});

	it("malformed range values → 400 on every range endpoint", async () => {
		for (const qs of [
			"block_number_start=abc&block_number_end=latest",
			"block_number_start=0&block_number_end=earliest",
			"block_number_start=1.5&block_number_end=latest",
			"block_number_start=0x10&block_number_end=latest",
			"timestamp_start=-1&timestamp_end=100",
			"timestamp_start=yesterday&timestamp_end=100",
			"timestamp_start=0&timestamp_end=latest",
			"block_hash=0x1234",
			"block_hash=latest",
		]) {
			for (const e of rangeEndpoints()) {
				const base = e.name === "blocks" ? "" : e.base;
				expectError(await f.get(url(e.path, base, qs)), 400);
			}
		}
	});

	it("/blocks without a range → 400 RANGE_REQUIRED (with or without limit)", async () => {
		expectError(await f.get(`${v1}/blocks`), 400, "RANGE_REQUIRED");
		expectError(await f.get(`${v1}/blocks?limit=10`), 400, "RANGE_REQUIRED");
		expectError(await f.get(`${v1}/blocks?order=desc`), 400, "RANGE_REQUIRED");
	});

	it("an unknown block_hash as the range → 404 BLOCK_NOT_FOUND", async () => {
		const unknown = `0x${"ab".repeat(32)}`;
		for (const e of rangeEndpoints()) {
			const base = e.name === "blocks" ? "" : e.base;
			const res = await f.get(url(e.path, base, `block_hash=${unknown}`));
			expectError(res, 404, "BLOCK_NOT_FOUND");
			expect(res.body.message).toContain(unknown);
		}
	});
});

describe("400: limit (§5)", () => {
	for (const limit of ["0", "-1", "-100", "1001", "5000", "abc", "1.5", "1e3", "", "0x10", "+5", " 5"]) {
		it(`limit=${JSON.stringify(limit)} → 400 on every list endpoint`, async () => {
			for (const e of listEndpoints()) {
				const res = await f.get(url(e.path, e.base, `limit=${encodeURIComponent(limit)}`));
				expectError(res, 400, "INVALID_PARAMETER");
				expect(res.body.message).toContain("limit");
			}
		});
	}

	it("limit 1 and 1000 are accepted", async () => {
		for (const e of listEndpoints()) {
			for (const limit of [1, 1000]) {
				const res = await f.get(url(e.path, e.base, `limit=${limit}`));
				expect(res.status, `${e.name} limit=${limit}`).toBe(200);
			}
		}
	});
});

describe("400: offset is not an item id (§5)", () => {
	it("on the id-paged lists → 400 INVALID_OFFSET", async () => {
		for (const offset of [
			"abc",
			"1",
			"0",
			"000000000000001C-0000-00000000", // upper case
			"000000000000001c-0000-0000000", // short ordinal
			"000000000000001c_0000_00000000",
			`${"0".repeat(16)}-0000-00000000-extra`,
			"",
		]) {
			for (const e of listEndpoints()) {
				if (e.name === "blocks") continue;
				const res = await f.get(url(e.path, e.base, `offset=${encodeURIComponent(offset)}`));
				expectError(res, 400);
				expect(["INVALID_OFFSET", "INVALID_PARAMETER"], `${e.name} offset=${offset}`).toContain(res.body.code);
			}
		}
	});

	it("on /blocks: an item id, a malformed hash, or an unknown block hash → 400", async () => {
		const blocks = `${v1}/blocks?block_number_start=0&block_number_end=latest`;
		for (const offset of ["0000000000000001-0000-00000000", "abc", "0x1234", ""]) {
			expectError(await f.get(`${blocks}&offset=${offset}`), 400);
		}
		const unknown = await f.get(`${blocks}&offset=0x${"cd".repeat(32)}`);
		expectError(unknown, 400, "INVALID_OFFSET");
	});
});

describe("400: endpoint parameters (§7)", () => {
	it("contracts/creates and self-destructs without origin, caller/sender or contract → 400", async () => {
		for (const which of ["creates", "self-destructs"]) {
			const path = `${v1}/contracts/${which}`;
			for (const qs of ["", "limit=10", "block_number_start=0&block_number_end=latest", "order=desc"]) {
				const res = await f.get(url(path, qs));
				expectError(res, 400, "MISSING_FILTER");
				expect(res.body.message).toMatch(/origin/);
				expect(res.body.message).toMatch(/caller/);
				expect(res.body.message).toMatch(/contract/);
			}
			// Each of the four alone is enough.
			const a = f.work.accounts.deployer;
			for (const qs of [`origin=${a}`, `caller=${a}`, `sender=${a}`, `contract=${f.work.contracts.token20}`]) {
				expect((await f.get(url(path, qs))).status, `${which}?${qs}`).toBe(200);
			}
		}
	});

	it("contracts: caller and sender naming different addresses → 400", async () => {
		const { alice, bob } = f.work.accounts;
		expectError(await f.get(`${v1}/contracts/creates?caller=${alice}&sender=${bob}`), 400);
		expect((await f.get(`${v1}/contracts/creates?caller=${alice}&sender=${alice}`)).status).toBe(200);
	});

	it("address transfers: contract with asset_type=native alone → 400", async () => {
		const path = `${v1}/address/${f.work.accounts.alice}/transfers`;
		const token = f.work.contracts.token20;
		const res = await f.get(`${path}?asset_type=native&contract=${token}`);
		expectError(res, 400, "INVALID_PARAMETER");
		expect(res.body.message).toMatch(/native/);
		expectError(await f.get(`${path}?asset_type=native,native&contract=${token}`), 400, "INVALID_PARAMETER");
		// Together with a token type, contract filters the token side: fine.
		expect((await f.get(`${path}?asset_type=native,ft&contract=${token}`)).status).toBe(200);
		expect((await f.get(`${path}?asset_type=ft&contract=${token}`)).status).toBe(200);
	});

	it("address txs: include_logs other than true/false → 400", async () => {
		const path = `${v1}/address/${f.work.accounts.alice}/txs`;
		for (const v of ["yes", "1", "0", "TRUE", "False", "", "truee", "null"]) {
			const res = await f.get(`${path}?include_logs=${v}`);
			expectError(res, 400, "INVALID_PARAMETER");
			expect(res.body.message).toContain("include_logs");
		}
		expect((await f.get(`${path}?include_logs=true`)).status).toBe(200);
		expect((await f.get(`${path}?include_logs=false`)).status).toBe(200);
	});

	it("enumerated parameters with other values → 400", async () => {
		const a = f.work.accounts.alice;
		const cases: [string, string][] = [
			[`${v1}/address/${a}/transfers?direction=both`, "direction"],
			[`${v1}/address/${a}/txs?direction=in`, "direction"],
			[`${v1}/address/${a}/transfers?asset_type=erc20`, "asset_type"],
			[`${v1}/address/${a}/transfers?asset_type=native,coins`, "asset_type"],
			[`${v1}/address/${a}/transfers?asset_type=`, "asset_type"],
			[`${v1}/address/${a}/txs?order=up`, "order"],
			[`${v1}/address/${a}/txs?order=ASC`, "order"],
			[`${v1}/address/${a}/txs?format=xml`, "format"],
			[`${v1}/calls?from=${a}&call_type=jump`, "call_type"],
		];
		for (const [path, param] of cases) {
			const res = await f.get(path);
			expectError(res, 400, "INVALID_PARAMETER");
			expect(res.body.message, path).toContain(param);
		}
	});

	it("events and calls without any filter → 400", async () => {
		expectError(await f.get(`${v1}/events`), 400, "MISSING_FILTER");
		expectError(await f.get(`${v1}/events?topic_1=0x${"00".repeat(32)}`), 400, "MISSING_FILTER");
		expectError(await f.get(`${v1}/calls`), 400, "MISSING_FILTER");
		expectError(await f.get(`${v1}/calls?call_type=call`), 400, "MISSING_FILTER");
	});

	it("more than 20 comma-separated contracts → 400", async () => {
		const many = Array.from({ length: 21 }, (_, i) => `0x${i.toString(16).padStart(40, "0")}`).join(",");
		const twenty = many.split(",").slice(0, 20).join(",");
		expectError(await f.get(`${v1}/events?contract=${many}`), 400, "INVALID_PARAMETER");
		expectError(await f.get(`${v1}/contracts/creates?contract=${many}`), 400, "INVALID_PARAMETER");
		expectError(
			await f.get(`${v1}/address/${f.work.accounts.alice}/transfers?contract=${many}`),
			400,
			"INVALID_PARAMETER",
		);
		expect((await f.get(`${v1}/events?contract=${twenty}`)).status).toBe(200);
	});
});

describe("400: address and hash formats", () => {
	const badAddresses = [
		"0x123",
		`0x${"g".repeat(40)}`,
		`0x${"a".repeat(39)}`,
		`0x${"a".repeat(41)}`,
		"a".repeat(40),
		`0x${"a".repeat(38)} `,
		"vitalik.eth",
	];
	const badHashes = ["0x1234", `0x${"a".repeat(63)}`, `0x${"a".repeat(65)}`, `0x${"z".repeat(64)}`, "b".repeat(64)];

	it("bad address in a path → 400 naming the parameter", async () => {
		for (const bad of badAddresses) {
			const e = encodeURIComponent(bad);
			for (const [path, name] of [
				[`${v1}/address/${e}/transfers`, "address"],
				[`${v1}/address/${e}/txs`, "address"],
				[`${v1}/contract/${e}/transfers`, "contract"],
			] as const) {
				const res = await f.get(path);
				expectError(res, 400, "INVALID_PARAMETER");
				expect(res.body.message, path).toContain(name);
			}
		}
	});

	it("bad address in a query parameter → 400 naming the parameter", async () => {
		const a = f.work.accounts.alice;
		const k = f.work.contracts;
		const params: [string, string, string][] = [
			[`${v1}/address/${a}/transfers`, "", "origin"],
			[`${v1}/address/${a}/transfers`, "", "counterparty"],
			[`${v1}/address/${a}/transfers`, "", "contract"],
			[`${v1}/address/${a}/txs`, "", "counterparty"],
			[`${v1}/contracts/creates`, "", "origin"],
			[`${v1}/contracts/creates`, "", "caller"],
			[`${v1}/contracts/creates`, "", "sender"],
			[`${v1}/contracts/creates`, "", "contract"],
			[`${v1}/contracts/self-destructs`, "", "origin"],
			[`${v1}/contracts/self-destructs`, "", "caller"],
			[`${v1}/contracts/self-destructs`, "", "sender"],
			[`${v1}/contracts/self-destructs`, "", "contract"],
			[`${v1}/events`, "", "contract"],
			[`${v1}/events`, `contract=${k.token20}`, "origin"],
			[`${v1}/calls`, "", "from"],
			[`${v1}/calls`, `from=${a}`, "to"],
			[`${v1}/calls`, `from=${a}`, "origin"],
		];
		for (const bad of badAddresses) {
			for (const [path, base, name] of params) {
				const res = await f.get(url(path, base, `${name}=${encodeURIComponent(bad)}`));
				expectError(res, 400, "INVALID_PARAMETER");
				expect(res.body.message, `${path} ${name}`).toContain(name);
			}
		}
		// One bad address in an otherwise good list.
		const res = await f.get(`${v1}/events?contract=${k.token20},0x123`);
		expectError(res, 400, "INVALID_PARAMETER");
	});

	it("an upper-case 0X prefix is refused in every address parameter, single or list", async () => {
		const a = f.work.accounts.alice;
		const upper = `0X${"a".repeat(40)}`;
		// Single-address parameters refuse it...
		for (const path of [`${v1}/address/${upper}/txs`, `${v1}/contracts/creates?origin=${upper}`]) {
			expectError(await f.get(path), 400, "INVALID_PARAMETER");
		}
		// ...and so must the comma-separated lists (same format, api-contract.md §5).
		for (const path of [
			`${v1}/events?contract=${upper}`,
			`${v1}/contracts/creates?contract=${upper}`,
			`${v1}/address/${a}/transfers?contract=${upper}`,
		]) {
			expectError(await f.get(path), 400, "INVALID_PARAMETER");
		}
	});

	it("bad hash in a path → 400; in a query parameter → 400", async () => {
		for (const bad of badHashes) {
			for (const path of [`${v1}/txs/${bad}`, `${v1}/txs/${bad}/logs`, `${v1}/blocks/${bad}`]) {
				expectError(await f.get(path), 400, "INVALID_PARAMETER");
			}
			for (const name of ["topic_0", "topic_1", "topic_2", "topic_3"]) {
				const res = await f.get(`${v1}/events?contract=${f.work.contracts.token20}&${name}=${bad}`);
				expectError(res, 400, "INVALID_PARAMETER");
				expect(res.body.message).toContain(name);
			}
			const res = await f.get(`${v1}/address/${f.work.accounts.alice}/txs?block_hash=${bad}`);
			expectError(res, 400, "INVALID_PARAMETER");
			expect(res.body.message).toContain("block_hash");
		}
	});
});

describe("400: unknown parameters", () => {
	it("are refused on every endpoint, and the message names them", async () => {
		const a = f.work.accounts.alice;
		const endpoints = [
			...listEndpoints().map((e) => url(e.path, e.base)),
			`${v1}/blocks/latest`,
			`${v1}/blocks/${blockHash}`,
			`${v1}/txs/${txHash}`,
		];
		for (const path of endpoints) {
			const sep = path.includes("?") ? "&" : "?";
			const res = await f.get(`${path}${sep}frobnicate=1`);
			expectError(res, 400, "INVALID_PARAMETER");
			expect(res.body.message, path).toContain("frobnicate");
		}
		// Parameters of one endpoint are unknown on another.
		for (const path of [
			`${v1}/txs/${txHash}?include_logs=true`,
			`${v1}/txs/${txHash}/logs?block_number_start=0&block_number_end=latest`,
			`${v1}/address/${a}/txs?asset_type=ft`,
			`${v1}/address/${a}/transfers?include_logs=true`,
			`${v1}/blocks/latest?limit=1`,
			`${v1}/contract/${f.work.contracts.token20}/transfers?direction=incoming`,
			`${v1}/address/${a}/txs?Limit=5`,
		]) {
			expectError(await f.get(path), 400, "INVALID_PARAMETER");
		}
	});
});

describe("chains (§1)", () => {
	const routes = () => {
		const a = f.work.accounts.alice;
		return [
			`/blocks/latest`,
			`/blocks/${blockHash}`,
			`/blocks?block_number_start=0&block_number_end=latest`,
			`/txs/${txHash}`,
			`/txs/${txHash}/logs`,
			`/address/${a}/transfers`,
			`/address/${a}/txs`,
			`/contract/${f.work.contracts.token20}/transfers`,
			`/events?contract=${f.work.contracts.token20}`,
			`/calls?from=${a}`,
			`/contracts/creates?origin=${a}`,
			`/contracts/self-destructs?origin=${a}`,
		];
	};

	it("a malformed chain id → 400 on every route", async () => {
		for (const chain of [
			"eth",
			"eip155",
			"eip155-",
			"eip155-abc",
			"eip155_1",
			"EIP155-1",
			"eip155--1",
			"1",
			"cosmos-1",
		]) {
			for (const r of routes()) {
				const res = await f.get(`/${chain}/v1${r}`);
				expectError(res, 400, "INVALID_PARAMETER");
				expect(res.body.message, `${chain} ${r}`).toContain("chain_id");
			}
		}
	});

	it("a well-formed chain id that is not served → 404 naming the chain, on every route", async () => {
		for (const chain of ["eip155-1", "eip155-5", "eip155-43114", "eip155-80001"]) {
			for (const r of routes()) {
				const res = await f.get(`/${chain}/v1${r}`);
				expectError(res, 404, "CHAIN_NOT_FOUND");
				expect(res.body.message, `${chain} ${r}`).toContain(chain);
			}
		}
	});
});

describe("404: unknown block, transaction, route", () => {
	it("unknown block hash → 404 naming it", async () => {
		const unknown = `0x${"12".repeat(32)}`;
		const res = await f.get(`${v1}/blocks/${unknown}`);
		expectError(res, 404, "BLOCK_NOT_FOUND");
		expect(res.body.message).toContain(unknown);
	});

	it("unknown tx hash → 404 naming it, also for its logs", async () => {
		const unknown = `0x${"34".repeat(32)}`;
		for (const path of [`${v1}/txs/${unknown}`, `${v1}/txs/${unknown}/logs`]) {
			const res = await f.get(path);
			expectError(res, 404, "TX_NOT_FOUND");
			expect(res.body.message).toContain(unknown);
		}
	});

	it("a block hash is not a tx hash and the reverse", async () => {
		expectError(await f.get(`${v1}/txs/${blockHash}`), 404, "TX_NOT_FOUND");
		expectError(await f.get(`${v1}/blocks/${txHash}`), 404, "BLOCK_NOT_FOUND");
	});

	it("unknown routes → 404 with the error body", async () => {
		for (const path of [
			`${v1}/nope`,
			`${v1}/address/${f.work.accounts.alice}`,
			`${v1}/address/${f.work.accounts.alice}/balances`,
			`${v1}/txs`,
			`${v1}/contracts`,
			`${v1}/contracts/destroys?origin=${f.work.accounts.alice}`,
			`/${f.chain}/v2/blocks/latest`,
			`/${f.chain}/blocks/latest`,
			"/nope",
			"/v1/blocks/latest",
		]) {
			expectError(await f.get(path), 404, "NOT_FOUND");
		}
	});
});

describe("a request with a body (every route but POST /sql is a GET and takes none)", () => {
	const send = async (method: "GET" | "POST" | "DELETE", contentType: string, payload: string) => {
		const res = await f.app.inject({
			method,
			url: `${v1}/blocks/latest`,
			headers: { ...AUTH, "content-type": contentType },
			payload,
		});
		return { status: res.statusCode, body: res.json(), headers: res.headers, raw: res.body } as Res;
	};

	it("a body past the size limit or not parseable → the error body, code BODY_NOT_ACCEPTED, saying to send GET", async () => {
		for (const [method, type, payload, status] of [
			["POST", "text/plain", "x".repeat(5000), 413],
			["POST", "application/json", "{bad", 400],
			["DELETE", "application/json", "{bad", 400],
		] as const) {
			const res = await send(method, type, payload);
			expectError(res, status, "BODY_NOT_ACCEPTED");
			expect(res.body.message).toContain("GET");
		}
	});

	it("a small well-formed body on another method → 404 NOT_FOUND naming the method", async () => {
		const res = await send("POST", "application/json", "{}");
		expectError(res, 404, "NOT_FOUND");
		expect(res.body.message).toContain("POST");
	});
});

describe("401: authentication (§2)", () => {
	const basic = (s: string) => `Basic ${Buffer.from(s, "utf8").toString("base64")}`;
	const bad: [string, Record<string, string>][] = [
		["no Authorization header", {}],
		["empty Authorization header", { authorization: "" }],
		["wrong Bearer key", { authorization: "Bearer wrong-key" }],
		["the key with a typo", { authorization: `Bearer ${TEST_KEY}x` }],
		["a prefix of the key", { authorization: `Bearer ${TEST_KEY.slice(0, -1)}` }],
		["'Bearer' alone", { authorization: "Bearer" }],
		["'Bearer ' and spaces", { authorization: "Bearer    " }],
		["Bearer with two tokens", { authorization: `Bearer ${TEST_KEY} ${TEST_KEY}` }],
		["'Basic !!!'", { authorization: "Basic !!!" }],
		["Basic with an empty username", { authorization: basic(":") }],
		["Basic with an empty username and the key as password", { authorization: basic(`:${TEST_KEY}`) }],
		["Basic with a wrong key", { authorization: basic("wrong-key:") }],
		["'Basic' alone", { authorization: "Basic" }],
		["'Token x'", { authorization: "Token x" }],
		["the key without a scheme", { authorization: TEST_KEY }],
		["another scheme with the key", { authorization: `Digest ${TEST_KEY}` }],
	];

	for (const [what, headers] of bad) {
		it(`${what} → 401 with WWW-Authenticate: Bearer and the JSON body`, async () => {
			const res = await f.get(`${v1}/blocks/latest`, headers);
			expectError(res, 401);
			expect(String(res.headers["www-authenticate"])).toMatch(/^Bearer\b/);
		});
	}

	it("every data route needs the key, before any other check (bad params, unknown chain)", async () => {
		const a = f.work.accounts.alice;
		for (const path of [
			`${v1}/blocks/latest`,
			`${v1}/blocks/${blockHash}`,
			`${v1}/blocks?block_number_start=0&block_number_end=latest`,
			`${v1}/blocks`,
			`${v1}/txs/${txHash}`,
			`${v1}/txs/${txHash}/logs`,
			`${v1}/address/${a}/transfers`,
			`${v1}/address/${a}/txs?include_logs=maybe`,
			`${v1}/address/0x123/txs`,
			`${v1}/contract/${f.work.contracts.token20}/transfers`,
			`${v1}/events?contract=${f.work.contracts.token20}`,
			`${v1}/calls?from=${a}`,
			`${v1}/contracts/creates?origin=${a}`,
			`${v1}/contracts/self-destructs`,
			`${v1}/blocks/latest?limit=0`,
			"/eip155-1/v1/blocks/latest",
			"/eth/v1/blocks/latest",
		]) {
			const res = await f.get(path, {});
			expectError(res, 401);
			expect(String(res.headers["www-authenticate"]), path).toMatch(/^Bearer\b/);
			// No data, and no hint about the chain or the parameters.
			expect(res.raw, path).not.toContain("eip155-31337");
		}
	});

	it("the same data routes answer with a key sent as Bearer (any case) or Basic base64(key:)", async () => {
		for (const authorization of [
			`Bearer ${TEST_KEY}`,
			`bearer ${TEST_KEY}`,
			basic(`${TEST_KEY}:`),
			`basic ${Buffer.from(`${TEST_KEY}:`).toString("base64")}`,
		]) {
			const res = await f.get(`${v1}/blocks/latest`, { authorization });
			expect(res.status, authorization).toBe(200);
		}
	});

	it("a percent-encoded path to a data route still needs the key", async () => {
		// The router decodes %76 to "v": these reach GET /{chain}/v1/blocks/latest.
		for (const path of [
			`/${f.chain}/%761/blocks/latest`,
			`/${f.chain}/v%31/blocks/latest`,
			`/${f.chain}/%76%31/txs/${txHash}`,
		]) {
			const res = await f.get(path, {});
			expect(res.status, `${path}: ${res.raw.slice(0, 120)}`).not.toBe(200);
			expectError(res, res.status === 404 ? 404 : 401);
		}
	});

	it("/healthz, /readyz, /openapi.json and /docs need no key", async () => {
		for (const headers of [{}, { authorization: "Bearer wrong-key" }] as Record<string, string>[]) {
			const health = await f.get("/healthz", headers);
			expect(health.status).toBe(200);
			expect(health.body).toEqual({ status: "ok" });
			const ready = await f.get("/readyz", headers);
			expect(ready.status).toBe(200);
			expect(ready.body.ready).toBe(true);
			const openapi = await f.get("/openapi.json", headers);
			expect(openapi.status).toBe(200);
			expect(typeof openapi.body.openapi).toBe("string");
			expect(Object.keys(openapi.body.paths as object).length).toBeGreaterThan(5);
			const docs = await f.get("/docs", headers);
			expect(docs.status).toBeLessThan(400);
			if (docs.status === 200) expect(docs.raw).toMatch(/<html/i);
		}
	});
});
