/**
 * Real Ethereum mainnet data through the whole pipeline: the recorded JSON-RPC responses
 * (test/fixtures/recorded-rpc.ts, chain id 0x1234 = 4660) are backfilled for block 483920
 * (0x76250, whose block and receipts are recorded; there are no traces for it, so traces "off"),
 * and the API must answer ethereum-etl's expected token transfers for that block
 * (expected/test_export_token_transfers_job/block_with_transfers/expected_token_transfers.csv).
 * Without traces, the trace-only endpoints answer 503 TRACES_UNAVAILABLE.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logRecord, stringifyExact } from "../../src/api/answers/records.js";
import { buildApp } from "../../src/api/app.js";
import { createKeyring } from "../../src/api/keys.js";
import type { BackfillSummary } from "../../src/backfill/backfill.js";
import { TOKEN_ORDINAL_BASE } from "../../src/extract/ids.js";
import { createStore } from "../../src/query/store/create-store.js";
import type { Store } from "../../src/query/store/store.js";
import { findEvents } from "../../src/query/transactions.js";
import { loadCsv, loadRpc } from "../fixtures/mainnet.js";
import { type RecordedRpcServer, startRecordedRpc } from "../fixtures/recorded-rpc.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { AUTH, TEST_KEY } from "../helpers/api.js";

type Item = Record<string, unknown>;
interface Envelope {
	range: { has_more: boolean; start_block: number; end_block: number; next_offset: string | null };
	items: Item[];
}
interface RecordedTx {
	hash: string;
	from: string;
	to: string | null;
	value: string;
	transactionIndex: string;
}
interface RecordedBlock {
	hash: string;
	parentHash: string;
	number: string;
	timestamp: string;
	transactions: RecordedTx[];
}

const CHAIN_ID = 4660;
const CHAIN = `eip155-${CHAIN_ID}`;
const V1 = `/${CHAIN}/v1`;
const BLOCK = 0x76250;
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const EXPECTED = "expected/test_export_token_transfers_job/block_with_transfers/expected_token_transfers.csv";

let server: RecordedRpcServer;
let dataDir: string;
let store: Store;
let app: FastifyInstance;
let summary: BackfillSummary;
let nodeHead: number;
const block = loadRpc<RecordedBlock>("eth_getBlockByNumber_0x76250_true");
const etl = loadCsv(EXPECTED);

beforeAll(async () => {
	server = await startRecordedRpc();
	const res = await fetch(server.url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
	});
	nodeHead = Number(((await res.json()) as { result: string }).result);
	dataDir = await mkdtemp(join(tmpdir(), "chainlake-mainnet-api-"));
	({ summary } = await backfillInto(dataDir, server.url, CHAIN_ID, { from: BLOCK, to: BLOCK, traces: "off" }));
	store = await createStore(dataDir);
	app = await buildApp({
		store,
		keyring: createKeyring({ path: join(dataDir, "_keys.json"), envKeys: [TEST_KEY] }),
		dataDir,
	});
});

afterAll(async () => {
	await app?.close();
	store?.close();
	await server?.close();
	if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function get(path: string) {
	const res = await app.inject({ method: "GET", url: path, headers: AUTH });
	return { status: res.statusCode, body: res.json() as Item, raw: res.body };
}
async function list(path: string): Promise<Envelope> {
	const r = await get(path);
	expect(r.status, `${path}: ${r.raw}`).toBe(200);
	return r.body as unknown as Envelope;
}

const txIndexOf = (hash: string) => {
	const tx = block.transactions.find((t) => t.hash === hash);
	if (!tx) throw new Error(`tx ${hash} not in the recorded block`);
	return Number(tx.transactionIndex);
};
/** An ethereum-etl token transfer row as the API's transfer item (api-contract.md §5, §6; src/extract/ids.ts). */
const etlItem = (row: Record<string, string>) => ({
	id: `${Number(row.block_number).toString(16).padStart(16, "0")}-${txIndexOf(row.transaction_hash ?? "")
		.toString(16)
		.padStart(4, "0")}-${(TOKEN_ORDINAL_BASE + Number(row.log_index)).toString(16).padStart(8, "0")}`,
	tx_hash: row.transaction_hash,
	block_number: Number(row.block_number),
	block_hash: block.hash,
	timestamp: Number(block.timestamp),
	contract: row.token_address,
	sender: row.from_address,
	recipient: row.to_address,
	value: row.value,
	token_id: null,
	asset_type: "ft",
	token_standard: "erc20",
});
const KEYS = Object.keys(etlItem(etl[0] ?? {}));
const pick = (o: Item) => Object.fromEntries(KEYS.map((k) => [k, o[k]]));

describe("mainnet block 483920 from recorded responses", () => {
	it("backfilled exactly that block, without traces, from recorded methods only", () => {
		expect(nodeHead).toBeGreaterThanOrEqual(BLOCK);
		expect(summary).toMatchObject({ from: BLOCK, to: BLOCK, traceFormat: null, blocks: 1 });
		expect(server.requests.filter((m) => m.startsWith("trace_") || m.startsWith("debug_"))).toEqual([]);
		// eth_getBlockReceipts is not recorded (-32601), so each receipt was fetched on its own.
		const receiptCalls = server.calls.filter((c) => c.method === "eth_getTransactionReceipt").map((c) => c.params[0]);
		expect(new Set(receiptCalls)).toEqual(new Set(block.transactions.map((t) => t.hash)));
		expect(etl).toHaveLength(2);
	});

	it("/blocks/latest is the recorded block", async () => {
		const r = await get(`${V1}/blocks/latest`);
		expect(r.status).toBe(200);
		expect(r.body).toMatchObject({
			number: BLOCK,
			hash: block.hash,
			parent_hash: block.parentHash,
			timestamp: Number(block.timestamp),
			transaction_count: block.transactions.length,
		});
	});

	it("/blocks answers the block as /blocks/{hash} does, byte for byte, in JSON and NDJSON (there DuckDB writes it)", async () => {
		const one = await get(`${V1}/blocks/${block.hash}`);
		// A 2015 block: its difficulty and total difficulty, exact JSON integers past 2^53.
		expect(one.raw).toMatch(/"difficulty":\d{13,},/);
		expect(one.raw).toMatch(/"total_difficulty":\d{17,},/);
		const range = `block_number_start=${BLOCK}&block_number_end=latest`;
		const env = await get(`${V1}/blocks?${range}`);
		expect(env.raw).toBe(
			`{"range":{"has_more":false,"start_block":${BLOCK},"end_block":${BLOCK},"next_offset":null},"items":[${one.raw}]}`,
		);
		expect((await get(`${V1}/blocks?${range}&format=ndjson`)).raw).toBe(`${one.raw}\n`);
	});

	it("/address/{from}/transfers answers ethereum-etl's token transfers (asset_type defaults to ft)", async () => {
		for (const row of etl) {
			const from = row.from_address ?? "";
			const env = await list(`${V1}/address/${from}/transfers`);
			expect(env.items.map(pick), from).toEqual(etl.filter((r) => r.from_address === from).map(etlItem));
			expect(env.range).toEqual({ has_more: false, start_block: 0, end_block: BLOCK, next_offset: null });
			// Same answer with the explicit list and direction, and as the recipient's incoming transfer.
			const out = await list(
				`${V1}/address/${from}/transfers?asset_type=ft&direction=outgoing&block_hash=${block.hash}`,
			);
			expect(out.items.map(pick)).toEqual(env.items.map(pick));
			const to = row.to_address ?? "";
			const incoming = await list(`${V1}/address/${to}/transfers?direction=incoming&contract=${row.token_address}`);
			expect(incoming.items.map(pick), to).toEqual([etlItem(row)]);
			expect((await list(`${V1}/address/${from}/transfers?direction=incoming`)).items).toEqual([]);
		}
	});

	it("/contract/{token}/transfers answers every transfer of the token, in log order", async () => {
		const tokens = [...new Set(etl.map((r) => r.token_address ?? ""))];
		for (const token of tokens) {
			const env = await list(`${V1}/contract/${token}/transfers?block_number_start=${BLOCK}&block_number_end=latest`);
			expect(env.items.map(pick), token).toEqual(etl.filter((r) => r.token_address === token).map(etlItem));
			expect(env.range).toMatchObject({ start_block: BLOCK, end_block: BLOCK });
		}
		const events = await list(`${V1}/events?contract=${tokens.join(",")}&topic_0=${TRANSFER_TOPIC}`);
		expect(events.items.map((l) => [l.tx_hash, l.log_index])).toEqual(
			etl.map((r) => [r.transaction_hash, Number(r.log_index)]),
		);
		// Written by DuckDB (record-json.ts): the bytes logRecord gives the same logs' columns.
		const query = `contract=${tokens.join(",")}&topic_0=${TRANSFER_TOPIC}`;
		const page = { start: 0, end: BLOCK, limit: 100, order: "asc" as const };
		const rows = await findEvents(store.snapshot(CHAIN), { contracts: tokens, topics: [[TRANSFER_TOPIC]] }, page);
		expect(rows.rows).toHaveLength(etl.length);
		const range = `{"has_more":false,"start_block":0,"end_block":${BLOCK},"next_offset":null}`;
		const items = rows.rows.map((r) => stringifyExact(logRecord(r)));
		expect((await get(`${V1}/events?${query}`)).raw).toBe(`{"range":${range},"items":[${items.join(",")}]}`);
		const ndjson = await app.inject({ url: `${V1}/events?${query}&format=ndjson`, headers: AUTH });
		expect(ndjson.body).toBe(items.map((i) => `${i}\n`).join(""));
	});

	it("without traces, native transfers are each transaction's own value", async () => {
		for (const tx of block.transactions) {
			const env = await list(`${V1}/address/${tx.from}/transfers?asset_type=native`);
			const value = BigInt(tx.value);
			expect(
				env.items.map((i) => [i.tx_hash, i.sender, i.recipient, i.value]),
				tx.hash,
			).toEqual(value > 0n ? [[tx.hash, tx.from, tx.to, value.toString()]] : []);
		}
	});

	it("/txs/{hash} answers each recorded transaction with its receipt's logs", async () => {
		for (const tx of block.transactions) {
			const r = await get(`${V1}/txs/${tx.hash}`);
			expect(r.status).toBe(200);
			expect(r.body).toMatchObject({ hash: tx.hash, block_number: BLOCK, index: Number(tx.transactionIndex) });
			expect(r.body.data).toMatchObject({ origin: tx.from, to: tx.to, value: BigInt(tx.value).toString() });
			const receipt = loadRpc<{ logs: { logIndex: string }[] }>(`eth_getTransactionReceipt_${tx.hash}`);
			expect((r.body.logs as Item[]).map((l) => l.log_index)).toEqual(receipt.logs.map((l) => Number(l.logIndex)));
			// The internals of a transaction without traces: its logs alone, no frames.
			const internals = await get(`${V1}/txs/${tx.hash}/logs`);
			expect(internals.status).toBe(200);
			expect(internals.body).toEqual(r.body);
		}
	});

	it("trace-only endpoints answer 503 TRACES_UNAVAILABLE", async () => {
		const someone = etl[0]?.from_address ?? "";
		for (const path of [
			`${V1}/contracts/creates?caller=${someone}`,
			`${V1}/contracts/creates?origin=${someone}`,
			`${V1}/contracts/self-destructs?contract=${someone}`,
			`${V1}/calls?from=${someone}`,
			`${V1}/calls?sig_hash=0xa9059cbb&include_events=true`,
			`${V1}/txs/${block.transactions[0]?.hash}/logs?include_failed_calls=true`,
		]) {
			const r = await get(path);
			expect(r.status, path).toBe(503);
			expect(r.body, path).toMatchObject({ statusCode: 503, error: "Service Unavailable", code: "TRACES_UNAVAILABLE" });
			expect(String(r.body.message)).not.toMatch(/read_parquet|SELECT|\/tmp\//);
		}
		const ready = await app.inject({ method: "GET", url: "/readyz" });
		expect(ready.json()).toMatchObject({
			ready: true,
			chains: [{ chain: CHAIN, ready: true, head_block: BLOCK, traces_unavailable_ranges: 1 }],
		});
	});
});
