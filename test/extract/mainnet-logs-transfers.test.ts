/**
 * Logs and token transfers decoded from real mainnet receipts and logs, compared with
 * ethereum-etl's exports of the same data; then malformed token logs, which must be skipped.
 *
 * etl's token_transfers put an ERC-20 amount (and an ERC-721 token id) in `value`; every etl
 * case here is ERC-20, so etl `value` is chainlake's `value`.
 */
import { describe, expect, it } from "vitest";
import { decodeBlock } from "../../src/extract/blocks.js";
import type { LogRow, TransferRow } from "../../src/extract/rows.js";
import {
	decodeTokenTransfers,
	TRANSFER_BATCH_TOPIC,
	TRANSFER_SINGLE_TOPIC,
	TRANSFER_TOPIC,
} from "../../src/extract/token-transfers.js";
import { decodeLogs } from "../../src/extract/transactions.js";
import type { RpcBlock, RpcLog, RpcReceipt } from "../../src/rpc/types.js";
import { dec, type JsonRecord, loadCsv, loadJsonLines, loadRpc } from "../fixtures/mainnet.js";

/** Decodes the logs of a recorded block from its recorded receipts, in transaction order. */
function logsOfBlock(blockFile: string): LogRow[] {
	const rpcBlock = loadRpc<RpcBlock>(blockFile);
	const block = decodeBlock(rpcBlock);
	return rpcBlock.transactions.flatMap((tx) => {
		const receipt = loadRpc<RpcReceipt>(`eth_getTransactionReceipt_${tx.hash}`);
		return decodeLogs(receipt, tx.from.toLowerCase(), block);
	});
}

const LOG_FIELDS = [
	"log_index",
	"transaction_hash",
	"transaction_index",
	"block_hash",
	"block_number",
	"address",
	"data",
] as const;

function ourLog(l: LogRow): Record<string, string | null> {
	const topics = [l.topic0, l.topic1, l.topic2, l.topic3].filter((t) => t !== null);
	return { ...Object.fromEntries(LOG_FIELDS.map((f) => [f, dec(l[f])])), topics: topics.join(",") };
}

/** etl's log: topics comma-joined in CSV, an array in JSON. */
function etlLog(r: JsonRecord): Record<string, string | null> {
	const topics = Array.isArray(r.topics) ? r.topics.join(",") : dec(r.topics);
	return { ...Object.fromEntries(LOG_FIELDS.map((f) => [f, dec(r[f])])), topics: topics ?? "" };
}

function ourTransfer(t: TransferRow): Record<string, string | null> {
	return {
		token_address: t.contract,
		from_address: t.sender,
		to_address: t.recipient,
		value: t.value,
		transaction_hash: t.transaction_hash,
		log_index: dec(t.log_index),
		block_number: dec(t.block_number),
	};
}

function etlTransfer(r: JsonRecord): Record<string, string | null> {
	const fields = ["token_address", "from_address", "to_address", "value", "transaction_hash", "log_index"];
	return { ...Object.fromEntries(fields.map((f) => [f, dec(r[f])])), block_number: dec(r.block_number) };
}

describe("mainnet logs: block 0x76250 (expected/test_export_receipts_job/receipts_with_logs)", () => {
	const logs = logsOfBlock("eth_getBlockByNumber_0x76250_true");

	it("decodes the receipts' logs field by field as ethereum-etl does (CSV)", () => {
		const expected = loadCsv("expected/test_export_receipts_job/receipts_with_logs/expected_logs.csv");
		expect(logs.map(ourLog)).toEqual(expected.map(etlLog));
	});

	it("decodes the receipts' logs as the JSON export too", () => {
		const expected = loadJsonLines("expected/test_export_receipts_job/receipts_with_logs/expected_logs.json");
		expect(logs.map(ourLog)).toEqual(expected.map(etlLog));
	});

	it("gives the same log rows from eth_getFilterLogs (what etl read) as from the receipts", () => {
		const filterLogs = loadRpc<RpcLog[]>("eth_getFilterLogs_0x0");
		const block = decodeBlock(loadRpc<RpcBlock>("eth_getBlockByNumber_0x76250_true"));
		const fromFilter = filterLogs.flatMap((log) => {
			const origin = logs.find((l) => l.transaction_hash === log.transactionHash)?.origin as string;
			return decodeLogs({ logs: [log] } as RpcReceipt, origin, block);
		});
		expect(fromFilter).toEqual(logs);
	});
});

describe("mainnet token transfers", () => {
	it("block 0x76250: matches expected/test_export_token_transfers_job/block_with_transfers", () => {
		const ours = decodeTokenTransfers(logsOfBlock("eth_getBlockByNumber_0x76250_true"));
		const expected = loadCsv(
			"expected/test_export_token_transfers_job/block_with_transfers/expected_token_transfers.csv",
		);
		expect(ours.map(ourTransfer)).toEqual(expected.map(etlTransfer));
		expect(ours.every((t) => t.token_standard === "erc20" && t.asset_type === "ft")).toBe(true);
	});

	it("expected/test_extract_token_transfers_job/logs: logs.csv gives etl's transfers, and topic0 de857d... none", () => {
		// LogRows built from etl's logs.csv (block 1452581); fields etl does not have get stand-ins.
		const csv = loadCsv("expected/test_extract_token_transfers_job/logs/logs.csv");
		const logs: LogRow[] = csv.map((r) => {
			const topics = r.topics === "" || r.topics === undefined ? [] : r.topics.split(",");
			return {
				id: `stand-in-${r.log_index}`,
				block_number: Number(r.block_number),
				block_hash: r.block_hash as string,
				block_timestamp: 0,
				transaction_index: Number(r.transaction_index),
				transaction_hash: r.transaction_hash as string,
				log_index: Number(r.log_index),
				origin: "0x0000000000000000000000000000000000000000",
				address: r.address as string,
				topic_count: topics.length,
				topic0: topics[0] ?? null,
				topic1: topics[1] ?? null,
				topic2: topics[2] ?? null,
				topic3: topics[3] ?? null,
				data: r.data as string,
			};
		});
		expect(logs).toHaveLength(3);
		const ours = decodeTokenTransfers(logs);
		const expected = loadCsv("expected/test_extract_token_transfers_job/logs/expected_token_transfers.csv");
		expect(ours.map(ourTransfer)).toEqual(expected.map(etlTransfer));
		// Log 4 has one topic, 0xde857d2761836ca6234345c7f7f4c783271ed7d1aedf9268b3fe32800d186fde: not a transfer.
		expect(logs[1]?.topic0).toMatch(/^0xde857d/);
		expect(ours.map((t) => t.log_index)).not.toContain(4);
	});

	it("test_stream blocks_1755634_1755635: the receipt of tx 0x2e3dcd05... gives etl's one transfer", () => {
		const dir = "expected/test_stream/blocks_1755634_1755635";
		const logs = logsOfBlock("eth_getBlockByNumber_0x1ac9f3_true");
		expect(logs.map(ourLog)).toEqual(loadJsonLines(`${dir}/expected_logs.json`).map(etlLog));
		const ours = decodeTokenTransfers(logs);
		const expected = loadJsonLines(`${dir}/expected_token_transfers.json`);
		expect(ours.map(ourTransfer)).toEqual(expected.map(etlTransfer));
		// 5 * 10^18 is above 2^53: kept exact end to end.
		expect(ours[0]?.value).toBe("5000000000000000000");
		expect(ours[0]?.block_timestamp).toBe(expected[0]?.block_timestamp);
		expect(ours[0]?.block_hash).toBe(expected[0]?.block_hash);
		expect(ours[0]?.transaction_hash).toBe("0x2e3dcd051a91d3a694f6b8de2ac4b5fe7acdba55f58bcf8471ff00d4a430074d");
	});
});

describe("malformed token logs: no rows, no throw", () => {
	const word = (hex: string) => hex.replace(/^0x/, "").padStart(64, "0");
	const addressTopic = (a: string) => `0x${word(a)}`;
	const A = addressTopic("0x1111111111111111111111111111111111111111");
	const B = addressTopic("0x2222222222222222222222222222222222222222");
	const OP = addressTopic("0x3333333333333333333333333333333333333333");

	/** A synthetic log (these shapes do not occur in the fixtures). */
	const log = (topics: string[], data: string, logIndex = 0): LogRow => ({
		id: `synthetic-${logIndex}`,
		block_number: 1,
		block_hash: `0x${"ab".repeat(32)}`,
		block_timestamp: 0,
		transaction_index: 0,
		transaction_hash: `0x${"cd".repeat(32)}`,
		log_index: logIndex,
		origin: "0x1111111111111111111111111111111111111111",
		address: "0x4444444444444444444444444444444444444444",
		topic_count: topics.length,
		topic0: topics[0] ?? null,
		topic1: topics[1] ?? null,
		topic2: topics[2] ?? null,
		topic3: topics[3] ?? null,
		data,
	});
	const data = (...words: (string | number)[]) =>
		`0x${words.map((w) => word(typeof w === "number" ? w.toString(16) : w)).join("")}`;
	/** ABI encoding of TransferBatch's (uint256[] ids, uint256[] values). */
	const batchData = (ids: number[], values: number[]) =>
		data(0x40, 0x40 + 32 * (ids.length + 1), ids.length, ...ids, values.length, ...values);

	const malformed: [string, LogRow][] = [
		["Transfer with 2 topics", log([TRANSFER_TOPIC, A], data(1))],
		["Transfer with 31 bytes of data", log([TRANSFER_TOPIC, A, B], `0x${"00".repeat(30)}01`)],
		["Transfer with 3 topics and 2 data words", log([TRANSFER_TOPIC, A, B], data(1, 2))],
		["Transfer with a non-address topic (high bytes set)", log([TRANSFER_TOPIC, `0x${"ff".repeat(32)}`, B], data(1))],
		["ERC-721 Transfer (4 topics) with a data word", log([TRANSFER_TOPIC, A, B, data(7)], data(1))],
		["TransferSingle with 3 topics", log([TRANSFER_SINGLE_TOPIC, OP, A], data(1, 2))],
		["TransferBatch with mismatched array lengths", log([TRANSFER_BATCH_TOPIC, OP, A, B], batchData([1, 2], [5]))],
		[
			"TransferBatch with an out-of-range offset",
			log([TRANSFER_BATCH_TOPIC, OP, A, B], data(0x40, 0x10000, 1, 7, 1, 9)),
		],
		[
			"TransferBatch with an offset of 2^255",
			log([TRANSFER_BATCH_TOPIC, OP, A, B], data(`8${"0".repeat(63)}`, 0x40, 1, 7)),
		],
		["Transfer with non-hex data of the right length", log([TRANSFER_TOPIC, A, B], `0x${"zz".repeat(32)}`)],
		[
			"Transfer with a non-hex address topic",
			log([TRANSFER_TOPIC, `0x${"0".repeat(24)}${"g".repeat(40)}`, B], data(1)),
		],
		["ERC-721 Transfer with a non-hex token id topic", log([TRANSFER_TOPIC, A, B, `0x${"q".repeat(64)}`], "0x")],
		[
			"TransferBatch with an array length beyond the data",
			log([TRANSFER_BATCH_TOPIC, OP, A, B], data(0x40, 0x80, 1000, 7, 1, 9)),
		],
	];

	it.each(malformed)("%s", (_name, bad) => {
		expect(() => decodeTokenTransfers([bad])).not.toThrow();
		expect(decodeTokenTransfers([bad])).toEqual([]);
	});

	it("the well-formed versions of the same logs do give rows (so the cases above test the malformation)", () => {
		const good = [
			log([TRANSFER_TOPIC, A, B], data(1), 0),
			log([TRANSFER_TOPIC, A, B, data(7)], "0x", 1),
			log([TRANSFER_SINGLE_TOPIC, OP, A, B], data(7, 2), 2),
			log([TRANSFER_BATCH_TOPIC, OP, A, B], batchData([1, 2], [5, 6]), 3),
		];
		const rows = decodeTokenTransfers(good);
		expect(rows.map((r) => [r.token_standard, r.value, r.token_id, r.batch_token_ids, r.batch_values])).toEqual([
			["erc20", "1", null, null, null],
			["erc721", null, "7", null, null],
			["erc1155", "2", "7", null, null],
			["erc1155", null, null, ["1", "2"], ["5", "6"]],
		]);
		// Malformed logs among good ones are skipped without disturbing the others.
		const mixed = decodeTokenTransfers([...malformed.map(([, l]) => l), ...good]);
		expect(mixed).toHaveLength(4);
	});
});
