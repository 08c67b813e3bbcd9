/**
 * The API over a real socket, called the way PARSIQ's official clients call it
 * (`@parsiq/tsunami-client` = parsiq/tsunami-api-client-js, and `parsiq.js`; see their
 * src/client/http-client.ts, convertor.ts and tsunami-client.ts / tsunami-request-handler.ts):
 *
 * - axios with `auth: { username: apiKey, password: "" }`: `Authorization: Basic base64(key + ":")`,
 *   and axios's default `Accept: application/json, text/plain, *\/*`;
 * - criteria arrays joined with "," (convertForRequest), axios's query encoding (commas unescaped);
 * - queryTsunami: params = { ...boundaries, ...criteria, offset?, limit: min(batchSize ?? 1000, 1000) },
 *   the same boundaries resent with offset = range.next_offset until range.has_more is false.
 *
 * Every walk is checked against a single limit=1000 page AND against what the workload did.
 * The last describe block mines and backfills new blocks mid-walk (the head moves), so it runs last.
 * The "request shapes the official clients send" block holds requests the clients make that the
 * API must accept unchanged (api-contract.md preamble); each is its own test.
 */
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type Address, type Block, createPublicClient, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import type { ExpectedTransfer } from "../../src/workload/types.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { type NodeApiFixture, startApiOnNode, TEST_KEY } from "../helpers/api.js";
import { nodeCall, receiptBlock } from "../helpers/node-rpc.js";

type Item = Record<string, unknown>;
interface Envelope {
	range: { has_more: boolean; start_block: number; end_block: number; next_offset: string | null };
	items: Item[];
}
type Params = Record<string, string | number | boolean | string[] | undefined>;

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const TRANSFER_SINGLE_TOPIC = "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62";
/** anvil's dev account #5, unused by the workload. */
const EXTRA_SENDER = "0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc";
const BASIC = `Basic ${Buffer.from(`${TEST_KEY}:`).toString("base64")}`;
const AXIOS_ACCEPT = "application/json, text/plain, */*";

let f: NodeApiFixture;
let origin: string;
let base: string;
let head: number;
const nodeBlocks: Block[] = [];

beforeAll(async () => {
	f = await startApiOnNode();
	await f.app.listen({ host: "127.0.0.1", port: 0 });
	const { port } = f.app.server.address() as AddressInfo;
	origin = `http://127.0.0.1:${port}`;
	base = `${origin}/${f.chain}/v1`;
	const node = createPublicClient({ transport: http(f.anvil.url) });
	head = Number(await node.getBlockNumber());
	for (let n = 0; n <= head; n++) nodeBlocks.push(await node.getBlock({ blockNumber: BigInt(n) }));
});

afterAll(async () => {
	await f?.close();
});

// ---------------------------------------------------------------------------------------------
// the client's side

/** axios's default params serializer: encodeURIComponent, then `:`, `$`, `,`, `[`, `]` left as is, space as `+`. */
function axiosQuery(params: Params): string {
	const encode = (s: string) =>
		encodeURIComponent(s)
			.replace(/%3A/gi, ":")
			.replace(/%24/g, "$")
			.replace(/%2C/gi, ",")
			.replace(/%20/g, "+")
			.replace(/%5B/gi, "[")
			.replace(/%5D/gi, "]");
	return Object.entries(params)
		.filter(([, v]) => v !== undefined)
		.map(([k, v]) => `${encode(k)}=${encode(Array.isArray(v) ? v.join(",") : String(v))}`)
		.join("&");
}

async function request(path: string, params: Params = {}, auth: string | null = BASIC) {
	const q = axiosQuery(params);
	const headers: Record<string, string> = { accept: AXIOS_ACCEPT };
	if (auth !== null) headers.authorization = auth;
	const res = await fetch(`${base}${path}${q ? `?${q}` : ""}`, { headers });
	const text = await res.text();
	let body: Item;
	try {
		body = JSON.parse(text) as Item;
	} catch {
		body = { text };
	}
	return { status: res.status, headers: res.headers, body };
}

async function page(path: string, params: Params): Promise<Envelope> {
	const r = await request(path, params);
	expect(r.status, `${path}?${axiosQuery(params)}: ${JSON.stringify(r.body)}`).toBe(200);
	return r.body as unknown as Envelope;
}

/**
 * queryTsunami: the same boundaries and criteria on every request, `offset` = the previous
 * page's next_offset, until has_more is false. Checks each page's paging state on the way.
 */
async function walk(path: string, criteria: Params, boundaries: Params, limit: number, key = "id") {
	const pages: Envelope[] = [];
	let offset: string | undefined;
	let hasMore: boolean;
	do {
		const env = await page(path, { ...boundaries, ...criteria, ...(offset ? { offset } : {}), limit });
		pages.push(env);
		hasMore = env.range.has_more;
		const last = env.items[env.items.length - 1];
		if (hasMore) {
			expect(env.items).toHaveLength(limit);
			expect(env.range.next_offset).toBe(last?.[key]);
		} else {
			expect(env.range.next_offset).toBeNull();
		}
		offset = env.range.next_offset ?? undefined;
		if (pages.length > 500) throw new Error(`${path}: the walk does not end`);
	} while (hasMore);
	const items = pages.flatMap((p) => p.items);
	expect(new Set(items.map((i) => i[key])).size, "no duplicates").toBe(items.length);
	return { pages, items };
}

/** A limit=1000 page and a walk with `limit` yield the same items; returns them. */
async function singleAndWalk(path: string, criteria: Params, boundaries: Params, limit = 2, key = "id") {
	const single = await page(path, { ...boundaries, ...criteria, limit: 1000 });
	expect(single.range.has_more).toBe(false);
	expect(single.range.next_offset).toBeNull();
	const { pages, items } = await walk(path, criteria, boundaries, limit, key);
	expect(items).toEqual(single.items);
	expect(pages).toHaveLength(Math.max(1, Math.ceil(single.items.length / limit)));
	for (const p of pages)
		expect(p.range).toMatchObject({ start_block: single.range.start_block, end_block: single.range.end_block });
	return single.items;
}

// ---------------------------------------------------------------------------------------------
// the workload's side

const w = () => f.work;
const txFrom = (hash: string) => w().txs.find((t) => t.hash === hash)?.from;
const asset = (t: ExpectedTransfer) => (t.kind === "native" ? "native" : t.kind === "erc20" ? "ft" : "nft");
const TRANSFER_KEYS = [
	"tx_hash",
	"block_number",
	"origin",
	"contract",
	"sender",
	"recipient",
	"value",
	"token_id",
	"asset_type",
	"token_standard",
];
const transferItem = (t: ExpectedTransfer) => ({
	tx_hash: t.txHash,
	block_number: t.blockNumber,
	origin: txFrom(t.txHash),
	contract: t.contract,
	sender: t.from,
	recipient: t.to,
	value: t.values ?? t.value,
	token_id: t.tokenIds ?? t.tokenId,
	asset_type: asset(t),
	token_standard: t.kind,
});
const pick = (o: Item, keys: string[]) => Object.fromEntries(keys.map((k) => [k, o[k]]));
const projectTransfers = (items: Item[]) => items.map((i) => pick(i, TRANSFER_KEYS));

const WHOLE = { block_number_start: 0, block_number_end: "latest" };

// ---------------------------------------------------------------------------------------------

describe("authentication as the clients send it", () => {
	it("Basic base64(key:) is accepted on every data route; Bearer too", async () => {
		const basic = await request("/blocks/latest");
		expect(basic.status).toBe(200);
		expect(basic.body.number).toBe(head);
		expect(basic.headers.get("content-type")).toContain("application/json");
		const bearer = await request("/blocks/latest", {}, `Bearer ${TEST_KEY}`);
		expect(bearer.body).toEqual(basic.body);
		// axios always sends the colon; with an empty password it is the key's whole credential. A
		// password is refused (issue 27: it was ignored, so any password passed), saying what to send.
		for (const password of ["x", TEST_KEY, ":"]) {
			const r = await request(
				"/blocks/latest",
				{},
				`Basic ${Buffer.from(`${TEST_KEY}:${password}`).toString("base64")}`,
			);
			expect(r.status, password).toBe(401);
			expect(r.body, password).toMatchObject({ code: "INVALID_AUTHORIZATION" });
			expect(String(r.body.message)).toContain("the password must be empty");
			expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
		}
		// No colon at all (no password sent): the key.
		expect((await request("/blocks/latest", {}, `Basic ${Buffer.from(TEST_KEY).toString("base64")}`)).status).toBe(200);
	});

	it("401 with WWW-Authenticate for a missing or unknown key; health needs none", async () => {
		for (const auth of [
			null,
			`Basic ${Buffer.from("wrong-key:").toString("base64")}`,
			"Bearer wrong-key",
			"Basic Og==",
		]) {
			const r = await request(`/address/${w().accounts.alice}/transfers`, WHOLE, auth);
			expect(r.status, String(auth)).toBe(401);
			expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
			expect(r.body).toMatchObject({ statusCode: 401, error: "Unauthorized" });
			expect(JSON.stringify(r.body)).not.toContain(TEST_KEY);
		}
		expect((await fetch(`${origin}/healthz`)).status).toBe(200);
		const ready = await fetch(`${origin}/readyz`);
		expect(ready.status).toBe(200);
		expect(((await ready.json()) as { chains: Item[] }).chains).toEqual([
			expect.objectContaining({ chain: f.chain, ready: true, head_block: head }),
		]);
	});
});

describe("paging as queryTsunami does it: one page of 1000, then a walk of pages of 2", () => {
	it("getTransfers: every account, asset_type as a comma-joined list", async () => {
		for (const a of Object.values(w().accounts)) {
			const items = await singleAndWalk(`/address/${a}/transfers`, { asset_type: ["native", "ft", "nft"] }, WHOLE);
			expect(projectTransfers(items), a).toEqual(
				w()
					.expected.transfers.filter((t) => t.from === a || t.to === a)
					.map(transferItem),
			);
		}
	});

	it("getTransfers with direction, counterparty and a contract list", async () => {
		const { alice, dave } = w().accounts;
		const c = w().contracts;
		const items = await singleAndWalk(
			`/address/${dave}/transfers`,
			{ asset_type: ["ft", "nft"], direction: "incoming", contract: [c.token20, c.token721, c.token1155] },
			WHOLE,
		);
		expect(projectTransfers(items)).toEqual(
			w()
				.expected.transfers.filter((t) => t.to === dave && t.kind !== "native")
				.map(transferItem),
		);
		const withAlice = await singleAndWalk(
			`/address/${dave}/transfers`,
			{ asset_type: ["native", "ft", "nft"], counterparty: alice },
			WHOLE,
			1,
		);
		expect(projectTransfers(withAlice)).toEqual(
			w()
				.expected.transfers.filter((t) => (t.from === alice && t.to === dave) || (t.from === dave && t.to === alice))
				.map(transferItem),
		);
	});

	it("getTransfers over a block range and a timestamp range (boundaries resent unchanged)", async () => {
		const { alice } = w().accounts;
		const ranged = await singleAndWalk(
			`/address/${alice}/transfers`,
			{ asset_type: ["native", "ft", "nft"] },
			{ block_number_start: 15, block_number_end: 28 },
		);
		expect(projectTransfers(ranged)).toEqual(
			w()
				.expected.transfers.filter(
					(t) => (t.from === alice || t.to === alice) && t.blockNumber >= 15 && t.blockNumber <= 28,
				)
				.map(transferItem),
		);
		const ts = (n: number) => Number(nodeBlocks[n]?.timestamp);
		const inWindow = nodeBlocks
			.filter((b) => Number(b.timestamp) >= ts(2) && Number(b.timestamp) <= ts(head))
			.map((b) => Number(b.number));
		const byTime = await singleAndWalk(
			`/address/${alice}/transfers`,
			{ asset_type: ["native", "ft", "nft"] },
			{ timestamp_start: ts(2), timestamp_end: ts(head) },
		);
		expect(projectTransfers(byTime)).toEqual(
			w()
				.expected.transfers.filter((t) => (t.from === alice || t.to === alice) && inWindow.includes(t.blockNumber))
				.map(transferItem),
		);
	});

	it("order=desc walks backwards through the same items", async () => {
		const { alice } = w().accounts;
		const criteria = { asset_type: ["native", "ft", "nft"] };
		const asc = await page(`/address/${alice}/transfers`, { ...WHOLE, ...criteria, limit: 1000 });
		const { items } = await walk(`/address/${alice}/transfers`, { ...criteria, order: "desc" }, WHOLE, 2);
		expect(items).toEqual([...asc.items].reverse());
	});

	it("getWalletTransactions with include_logs=true", async () => {
		const { alice } = w().accounts;
		const items = await singleAndWalk(`/address/${alice}/txs`, { include_logs: true }, WHOLE);
		expect(items.map((i) => i.hash)).toEqual(
			w()
				.txs.filter((t) => t.from === alice || t.to === alice)
				.map((t) => t.hash),
		);
		for (const i of items) expect(Array.isArray(i.logs)).toBe(true);
		const out = await singleAndWalk(
			`/address/${alice}/txs`,
			{ direction: "outgoing", counterparty: w().contracts.token1155 },
			WHOLE,
		);
		expect(out.map((i) => i.hash)).toEqual(
			w()
				.txs.filter((t) => t.from === alice && t.to === w().contracts.token1155)
				.map((t) => t.hash),
		);
	});

	it("getBlocks and getBlocksByTimestamp page by block hash", async () => {
		const blocks = await singleAndWalk("/blocks", {}, WHOLE, 2, "hash");
		expect(blocks.map((b) => b.hash)).toEqual(nodeBlocks.map((b) => b.hash));
		const ts = (n: number) => Number(nodeBlocks[n]?.timestamp);
		const byTime = await singleAndWalk("/blocks", {}, { timestamp_start: ts(0), timestamp_end: ts(head) }, 3, "hash");
		expect(byTime.map((b) => b.number)).toEqual(nodeBlocks.map((b) => Number(b.number)));
		// getBlockByNumber(n) is getBlocks(n, n).next().
		const one = await page("/blocks", { block_number_start: 7, block_number_end: 7, limit: 1000 });
		expect(one.items.map((b) => b.hash)).toEqual([nodeBlocks[7]?.hash]);
		// getBlockByHash and getTransaction.
		expect((await request(`/blocks/${nodeBlocks[7]?.hash}`)).body.number).toBe(7);
		const tx = w().txs[3];
		expect((await request(`/txs/${tx?.hash}`)).body.hash).toBe(tx?.hash);
		expect((await request(`/txs/0x${"00".repeat(32)}`)).status).toBe(404);
	});

	it("getContractCreates, getContractSelfDestructs, getContractTransfers and getEvents", async () => {
		const { deployer } = w().accounts;
		const c = w().contracts;
		const creates = await singleAndWalk("/contracts/creates", { caller: deployer }, WHOLE);
		expect(creates.map((i) => i.contract)).toEqual(
			w()
				.expected.creations.filter((x) => x.caller === deployer)
				.map((x) => x.contract),
		);
		const children = await singleAndWalk("/contracts/creates", { contract: [c.createChild, c.create2Child] }, WHOLE, 1);
		expect(children.map((i) => [i.contract, i.op_code])).toEqual([
			[c.createChild, "CREATE"],
			[c.create2Child, "CREATE2"],
		]);
		const sds = await singleAndWalk("/contracts/self-destructs", { contract: [c.selfDestructor] }, WHOLE, 1);
		expect(sds.map((i) => [i.contract, i.value])).toEqual(w().expected.selfDestructs.map((s) => [s.contract, s.value]));
		const token = await singleAndWalk(`/contract/${c.token1155}/transfers`, {}, WHOLE);
		expect(projectTransfers(token)).toEqual(
			w()
				.expected.transfers.filter((t) => t.contract === c.token1155)
				.map(transferItem),
		);
		const events = await singleAndWalk(
			"/events",
			{ contract: [c.token20, c.token721], topic_0: [TRANSFER_TOPIC] },
			WHOLE,
		);
		expect(events.map((e) => e.tx_hash)).toEqual(
			w()
				.expected.transfers.filter((t) => t.contract === c.token20 || t.contract === c.token721)
				.map((t) => t.txHash),
		);
	});
});

describe("request shapes the official clients send (must work unchanged)", () => {
	it("getContractTransfers sends asset_type (GetTsunamiTransfersQuery) to /contract/{c}/transfers", async () => {
		const c = w().contracts;
		const r = await request(`/contract/${c.token1155}/transfers`, {
			...WHOLE,
			asset_type: ["nft", "multi"],
			limit: 1000,
		});
		expect(r.status, JSON.stringify(r.body)).toBe(200);
		expect(projectTransfers((r.body as unknown as Envelope).items)).toEqual(
			w()
				.expected.transfers.filter((t) => t.contract === c.token1155)
				.map(transferItem),
		);
	});

	it("queryTsunami forwards boundaries.batchSize as a query parameter", async () => {
		// params = { ...boundaries, ...criteria, limit: min(batchSize, 1000) } with boundaries.batchSize = 2.
		const r = await request(`/address/${w().accounts.alice}/transfers`, {
			...WHOLE,
			batchSize: 2,
			asset_type: ["native", "ft", "nft"],
			limit: 2,
		});
		expect(r.status, JSON.stringify(r.body)).toBe(200);
		expect((r.body as unknown as Envelope).items).toHaveLength(2);
	});

	it("getTransactionWithLogs reads /txs/{hash}/logs as the transaction with its logs", async () => {
		const hash = w().expected.oddLogTxHash;
		const r = await request(`/txs/${hash}/logs`);
		expect(r.status).toBe(200);
		// TsunamiTransactionWithLogs: { hash, block_hash, block_number, ..., logs }.
		expect(r.body.hash).toBe(hash);
		// The frames come first (op_code CALL ...), then the logs.
		expect((r.body.logs as Item[] | undefined)?.map((l) => l.op_code)).toEqual(["CALL", "LOG1", "LOG2", "LOG3"]);
	});

	it("getEvents sends topic_0 as a comma-joined list (GetTsunamiEventQuery.topic_0: string[])", async () => {
		const r = await request("/events", { ...WHOLE, topic_0: [TRANSFER_TOPIC, TRANSFER_SINGLE_TOPIC], limit: 1000 });
		expect(r.status, JSON.stringify(r.body)).toBe(200);
		const items = (r.body as unknown as Envelope).items;
		expect(new Set(items.map((i) => i.topic_0))).toEqual(new Set([TRANSFER_TOPIC, TRANSFER_SINGLE_TOPIC]));
	});

	it("getCalls sends contract (list) and sender (GetTsunamiCallQuery)", async () => {
		const { alice } = w().accounts;
		const fw = w().contracts.forwarder;
		const r = await request("/calls", { ...WHOLE, contract: [fw], sender: alice, limit: 1000 });
		expect(r.status, JSON.stringify(r.body)).toBe(200);
		expect((r.body as unknown as Envelope).items.map((i) => i.tx_hash)).toEqual(
			w()
				.txs.filter((t) => t.from === alice && t.to === fw)
				.map((t) => t.hash),
		);
	});
});

// ---------------------------------------------------------------------------------------------
// Requests parsiq.js makes that once answered 404 or 400 (issue 25), checked against the node.

/** A frame of the node's callTracer, flattened depth first. */
interface NodeFrame {
	type: string;
	from: string;
	to?: string;
	input: string;
	value?: string;
	error?: string;
	calls?: NodeFrame[];
}
interface NodeLog {
	address: string;
	topics: string[];
	data: string;
}

/** The node's frames of a transaction in execution order, each with whether it and its callers succeeded. */
async function nodeFrames(hash: string) {
	const root = (await nodeCall(f.anvil.url, "debug_traceTransaction", [hash, { tracer: "callTracer" }])) as NodeFrame;
	const out: (NodeFrame & { ok: boolean })[] = [];
	const walkFrames = (fr: NodeFrame, ok: boolean) => {
		const mine = ok && fr.error === undefined;
		out.push({ ...fr, ok: mine });
		for (const c of fr.calls ?? []) walkFrames(c, mine);
	};
	walkFrames(root, true);
	return out;
}

const nodeLogs = async (hash: string) =>
	((await nodeCall(f.anvil.url, "eth_getTransactionReceipt", [hash])) as { logs: NodeLog[] }).logs;

/** A receipt log as an item of /events, a call's `events` and /txs/{hash}/logs show it. */
const logShape = (l: NodeLog) => ({
	contract: l.address.toLowerCase(),
	op_code: `LOG${l.topics.length}`,
	topic_0: l.topics[0] ?? null,
	topic_1: l.topics[1] ?? null,
	topic_2: l.topics[2] ?? null,
	topic_3: l.topics[3] ?? null,
	log_data: l.data,
});
const LOG_SHAPE_KEYS = Object.keys(logShape({ address: "", topics: [], data: "" }));

/** What a call frame looks like in /txs/{hash}/logs, from the node's frame. */
const frameShape = (fr: NodeFrame) => ({
	op_code: fr.type,
	sender: fr.from.toLowerCase(),
	contract: (fr.type === "SELFDESTRUCT" ? fr.from : fr.to)?.toLowerCase() ?? null,
	// A self-destruct carries no call data: null, where the node's tracer writes "0x".
	input_data: fr.type === "SELFDESTRUCT" ? null : fr.input,
	sig_hash: fr.input.length >= 10 ? fr.input.slice(0, 10) : null,
	status: (fr as { ok?: boolean }).ok,
});
const FRAME_KEYS = ["op_code", "sender", "contract", "input_data", "sig_hash", "status"];

/** A CSV answer of plain cells (hex, numbers, empty for null) as header and rows. */
function parseCsv(text: string) {
	const [header = "", ...rows] = text.trimEnd().split("\n");
	return { header: header.split(","), rows: rows.map((r) => r.split(",")) };
}

/** A GET through a socket the way the clients send it, answered as text. */
async function requestText(url: string) {
	const res = await fetch(url, { headers: { accept: AXIOS_ACCEPT, authorization: BASIC } });
	return { status: res.status, headers: res.headers, text: await res.text() };
}

describe("parsiq.js requests that were missing", () => {
	it("logs.csvExport: GET /csv-exports/events answers the /events rows as CSV, all pages of the range", async () => {
		const token = w().contracts.token20;
		const criteria = { contract: [token], topic_0: [TRANSFER_TOPIC] };
		const expected = w().expected.transfers.filter((t) => t.kind === "erc20" && t.contract === token);
		expect(expected.length).toBeGreaterThan(2);
		// getCsvStream: params = { ...rangeOptions, ...criteria } (no limit).
		const r = await requestText(`${base}/csv-exports/events?${axiosQuery({ ...WHOLE, ...criteria })}`);
		expect(r.status, r.text).toBe(200);
		expect(r.headers.get("content-type")).toContain("text/csv");
		expect(r.headers.get("x-has-more")).toBe("false");
		const csv = parseCsv(r.text);
		const events = await singleAndWalk("/events", criteria, WHOLE);
		expect(csv.header).toEqual(Object.keys(events[0] ?? {}));
		expect(csv.rows.map((row) => Object.fromEntries(csv.header.map((c, i) => [c, row[i]])))).toEqual(
			events.map((e) => Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v === null ? "" : String(v)]))),
		);
		// One row per Transfer log the token emitted, as the workload made them.
		const col = (name: string) => csv.rows.map((row) => row[csv.header.indexOf(name)]);
		expect(col("tx_hash")).toEqual(expected.map((t) => t.txHash));
		expect(col("block_number")).toEqual(expected.map((t) => String(t.blockNumber)));
		expect(col("topic_1")).toEqual(expected.map((t) => `0x${t.from.slice(2).padStart(64, "0")}`));
		// Nothing matches: the header row alone.
		const empty = await requestText(`${base}/csv-exports/events?${axiosQuery({ ...WHOLE, origin: EXTRA_SENDER })}`);
		expect([empty.status, empty.text, empty.headers.get("x-has-more")]).toEqual([
			200,
			`${csv.header.join(",")}\n`,
			"false",
		]);
		// The filters are those of /events: none of contract, topic_0, origin is a 400 saying so.
		const none = await requestText(`${base}/csv-exports/events?${axiosQuery(WHOLE)}`);
		expect(none.status).toBe(400);
		expect(JSON.parse(none.text).message).toContain("contract, topic_0, origin");
	});

	it("an export larger than the server's answer cap stops at a row and resumes from X-Next-Offset", async () => {
		const criteria = { ...WHOLE, topic_0: [TRANSFER_TOPIC, TRANSFER_SINGLE_TOPIC] };
		const whole = await requestText(`${base}/csv-exports/events?${axiosQuery(criteria)}`);
		const all = parseCsv(whole.text);
		expect(all.rows.length).toBeGreaterThan(6);
		// The same data behind an app whose answers are capped at the header and about three rows.
		const capped = await buildApp({
			store: f.store,
			keyring: createKeyring({ path: join(f.dataDir, "_keys.json"), envKeys: [TEST_KEY] }),
			dataDir: f.dataDir,
			maxResponseBytes: Buffer.byteLength(whole.text.split("\n").slice(0, 4).join("\n")) + 1,
		});
		try {
			const rows: string[][] = [];
			let offset: string | undefined;
			let answers = 0;
			for (let more = true; more; answers++) {
				const res = await capped.inject({
					url: `/${f.chain}/v1/csv-exports/events?${axiosQuery({ ...criteria, offset })}`,
					headers: { authorization: BASIC },
				});
				expect(res.statusCode, res.body).toBe(200);
				const part = parseCsv(res.body);
				expect(part.header).toEqual(all.header);
				expect(part.rows.length).toBeGreaterThan(0);
				expect(part.rows.length).toBeLessThanOrEqual(3);
				rows.push(...part.rows);
				more = res.headers["x-has-more"] === "true";
				offset = String(res.headers["x-next-offset"]);
				if (more) expect(offset).toBe(part.rows.at(-1)?.[0]);
				else expect(offset).toBe("");
			}
			expect(rows).toEqual(all.rows);
			expect(answers).toBeGreaterThanOrEqual(Math.ceil(all.rows.length / 3));
		} finally {
			await capped.close();
		}
	});

	it("op_code (TsunamiLogsCriteria.op_code) keeps the logs with that many topics; an unknown one is a 400", async () => {
		const logger = w().contracts.oddLogger;
		const logs = await nodeLogs(w().expected.oddLogTxHash);
		for (const op of ["LOG1", "LOG2", "LOG3", "LOG4"]) {
			const items = await singleAndWalk("/events", { contract: [logger], op_code: op }, WHOLE, 1);
			const want = logs.filter((l) => `LOG${l.topics.length}` === op).map(logShape);
			expect(
				items.map((i) => pick(i, LOG_SHAPE_KEYS)),
				op,
			).toEqual(want);
		}
		const bad = await request("/events", { ...WHOLE, contract: [logger], op_code: "LOG5" });
		expect(bad.status).toBe(400);
		expect(String(bad.body.message)).toContain("op_code");
		const csv = await requestText(
			`${base}/csv-exports/events?${axiosQuery({ ...WHOLE, op_code: "LOG2", origin: w().accounts.alice })}`,
		);
		expect(csv.status).toBe(200);
	});

	it("internalTransactions: sig_hash as a list selects the frames whose input starts with one of them", async () => {
		const selectors = ["0xa9059cbb", "0x23b872dd"];
		const want: Item[] = [];
		for (const t of w().txs)
			for (const fr of await nodeFrames(t.hash))
				if (selectors.includes(fr.input.slice(0, 10)))
					want.push({
						tx_hash: t.hash,
						op_code: fr.type,
						sender: fr.from.toLowerCase(),
						contract: fr.to?.toLowerCase(),
						sig_hash: fr.input.slice(0, 10),
						input_data: fr.input,
						status: fr.ok,
					});
		expect(new Set(want.map((c) => c.sig_hash))).toEqual(new Set(selectors));
		// The client sends sig_hash alone (GetTsunamiCallQuery.sig_hash: string[]).
		const items = await singleAndWalk("/calls", { sig_hash: selectors }, WHOLE);
		expect(
			items.map((i) => pick(i, ["tx_hash", "op_code", "sender", "contract", "sig_hash", "input_data", "status"])),
		).toEqual(want);
		for (const i of items) expect([i.sender, i.input_data, i.output_data]).toEqual([i.from, i.input, i.output]);
		const one = await singleAndWalk("/calls", { sig_hash: [selectors[0] as string] }, WHOLE);
		expect(one.map((i) => i.id)).toEqual(items.filter((i) => i.sig_hash === selectors[0]).map((i) => i.id));
		const bad = await request("/calls", { ...WHOLE, sig_hash: ["0xa9059cbb", "0x1234"] });
		expect(bad.status).toBe(400);
		expect(String(bad.body.message)).toContain("sig_hash");
	});

	it("include_events=true gives each call the logs its transaction's receipt holds from the contract it ran as", async () => {
		const { token20, token721, token1155 } = w().contracts;
		const items = await singleAndWalk(
			"/calls",
			{ contract: [token20, token721, token1155], include_events: true },
			WHOLE,
		);
		expect(items.length).toBeGreaterThan(5);
		let withEvents = 0;
		for (const i of items) {
			const logs = (await nodeLogs(i.tx_hash as string)).filter((l) => l.address.toLowerCase() === i.contract);
			const events = i.events as Item[];
			expect(
				events.map((e) => pick(e, LOG_SHAPE_KEYS)),
				String(i.id),
			).toEqual(i.status ? logs.map(logShape) : []);
			if (events.length > 0) withEvents++;
		}
		expect(withEvents).toBeGreaterThan(3);
		// Without include_events no call carries events.
		const plain = await page("/calls", { ...WHOLE, contract: [token20], limit: 1000 });
		for (const i of plain.items) expect(i).not.toHaveProperty("events");
		expect((await request("/calls", { ...WHOLE, contract: [token20], include_events: "yes" })).status).toBe(400);
	});

	it("getTransactionInternals: the transaction's frames then its logs; include_failed_calls adds the reverted frames", async () => {
		let reverted = 0;
		for (const t of w().txs) {
			const frames = await nodeFrames(t.hash);
			const logs = (await nodeLogs(t.hash)).map(logShape);
			for (const [params, keep] of [
				[{}, frames.filter((fr) => fr.ok)],
				[{ include_failed_calls: false }, frames.filter((fr) => fr.ok)],
				[{ include_failed_calls: true }, frames],
			] as const) {
				const r = await request(`/txs/${t.hash}/logs`, params);
				expect(r.status, JSON.stringify(r.body)).toBe(200);
				expect(r.body.hash).toBe(t.hash);
				const items = r.body.logs as Item[];
				const calls = items.slice(0, keep.length);
				expect(
					calls.map((c) => pick(c, FRAME_KEYS)),
					`${t.label} ${JSON.stringify(params)}`,
				).toEqual(keep.map(frameShape));
				expect(items.slice(keep.length).map((l) => pick(l, LOG_SHAPE_KEYS))).toEqual(logs);
			}
			reverted += frames.filter((fr) => !fr.ok).length;
		}
		// The workload's failed transaction and its inner revert give reverted frames to show.
		expect(reverted).toBeGreaterThanOrEqual(2);
		const bad = await request(`/txs/${w().expected.innerRevertTxHash}/logs`, { include_failed_calls: "1" });
		expect(bad.status).toBe(400);
		expect(String(bad.body.message)).toContain("include_failed_calls");
	});

	it("nft.getCollectionMetadata says the standard the collection's items say", async () => {
		const nft = `${origin}/nft/${f.chain}/v1`;
		const get = async (path: string) => {
			const r = await requestText(`${nft}${path}`);
			expect(r.status, r.text).toBe(200);
			return JSON.parse(r.text) as Item;
		};
		for (const kind of ["erc721", "erc1155"] as const) {
			const contract = kind === "erc721" ? w().contracts.token721 : w().contracts.token1155;
			expect(w().expected.transfers.some((t) => t.contract === contract && t.kind === kind)).toBe(true);
			expect((await get(`/${contract}/contract-data`)).standard, contract).toBe(kind);
			const history = (await get(`/${contract}/owner`)).items as Item[];
			const holder = history[0]?.owner as string;
			const inventory = (await get(`/${holder}/inventory?contract=${contract}`)).items as Item[];
			expect(inventory.length).toBeGreaterThan(0);
			for (const i of inventory) expect((i.collection as Item).standard).toBe(kind);
		}
		const none = await requestText(`${nft}/${w().contracts.token20}/contract-data`);
		expect(none.status).toBe(404);
	});
});

// Runs last: it mines and backfills new blocks.
describe("a walk whose range ends at latest while the head moves", () => {
	it("sees no duplicates and no gaps, and picks up the new transfers", async () => {
		const { alice } = w().accounts;
		const path = `/address/${alice}/transfers`;
		const criteria = { asset_type: ["native", "ft", "nft"] };
		const before = w()
			.expected.transfers.filter((t) => t.from === alice || t.to === alice)
			.map(transferItem);

		const first = await page(path, { ...WHOLE, ...criteria, limit: 3 });
		expect(first.range).toMatchObject({ has_more: true, end_block: head });

		// Two new native transfers to alice land in new blocks, and are backfilled.
		const sent: Hex[] = [];
		for (const value of ["0x1111", "0x2222"]) {
			const res = await fetch(f.anvil.url, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({
					jsonrpc: "2.0",
					id: 1,
					method: "eth_sendTransaction",
					params: [{ from: EXTRA_SENDER, to: alice, value }],
				}),
			});
			sent.push(((await res.json()) as { result: Hex }).result);
		}
		// Backfill up to the last transaction's block, read from its receipt: right after
		// eth_sendTransaction anvil's eth_blockNumber can still report the block before.
		const to = await receiptBlock(f.anvil.url, sent[sent.length - 1]);
		await backfillInto(f.dataDir, f.anvil.url, 31337, { from: head + 1, to, partitionSize: 8 });

		const items = [...first.items];
		let offset = first.range.next_offset;
		let last = first;
		while (last.range.has_more) {
			last = await page(path, { ...WHOLE, ...criteria, offset: offset ?? undefined, limit: 3 });
			items.push(...last.items);
			offset = last.range.next_offset;
		}
		expect(last.range.end_block).toBe(head + 2);
		expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
		expect(projectTransfers(items.slice(0, before.length))).toEqual(before);
		expect(
			items.slice(before.length).map((i) => pick(i, ["tx_hash", "sender", "recipient", "value", "asset_type"])),
		).toEqual(
			sent.map((hash, k) => ({
				tx_hash: hash,
				sender: EXTRA_SENDER,
				recipient: alice as Address,
				value: String(k === 0 ? 0x1111 : 0x2222),
				asset_type: "native",
			})),
		);
	});
});
