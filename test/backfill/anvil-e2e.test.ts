import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload, type WorkloadResult } from "../../src/workload/run.js";
import { backfillInto, openViews } from "../helpers/anvil-chain.js";

/**
 * End to end on a real anvil node: the Solidity workload (ERC-20/721/1155, CREATE/CREATE2,
 * self-destruct, internal value calls, reverts, odd logs) is backfilled twice, once from
 * `trace_block` and once from geth's callTracer, and every expected row is asserted with DuckDB
 * over the written Parquet files.
 */
let anvil: AnvilInstance;
let work: WorkloadResult;
let root: string;
let parity: Awaited<ReturnType<typeof openViews>>;
let geth: Awaited<ReturnType<typeof openViews>>;
const CHAIN = 31337;

beforeAll(async () => {
	anvil = await startAnvil({ chainId: CHAIN });
	work = await runWorkload({ rpcUrl: anvil.url });
	root = await mkdtemp(join(tmpdir(), "chainlake-e2e-"));
	// Small partitions so the range spans several chunks and files.
	const a = await backfillInto(join(root, "parity"), anvil.url, CHAIN, { traces: "parity", partitionSize: 8 });
	const b = await backfillInto(join(root, "geth"), anvil.url, CHAIN, { traces: "geth", partitionSize: 8 });
	expect(a.summary.traceFormat).toBe("parity");
	expect(b.summary.traceFormat).toBe("geth");
	parity = await openViews(join(root, "parity"), CHAIN);
	geth = await openViews(join(root, "geth"), CHAIN);
});

afterAll(async () => {
	parity?.close();
	geth?.close();
	await anvil?.stop();
	await rm(root, { recursive: true, force: true });
});

const expectedTransferRows = () =>
	work.expected.transfers.map((t) => ({
		transaction_hash: t.txHash,
		token_standard: t.kind,
		asset_type: t.kind === "native" ? "native" : t.kind === "erc20" ? "ft" : "nft",
		contract: t.contract,
		sender: t.from,
		recipient: t.to,
		value: t.value,
		token_id: t.tokenId,
		batch_values: t.values ?? null,
		batch_token_ids: t.tokenIds ?? null,
	}));

const TRANSFER_COLUMNS =
	"transaction_hash, token_standard, asset_type, contract, sender, recipient, value, token_id, batch_values, batch_token_ids";

describe.each([
	["trace_block", () => parity],
	["debug_traceBlockByNumber", () => geth],
])("backfill of the anvil workload from %s", (_source, views) => {
	it("writes every block once, chained by parent hash", async () => {
		const blocks = await views().rows("SELECT number, hash, parent_hash FROM blocks ORDER BY number");
		expect(blocks.map((b) => Number(b.number))).toEqual(Array.from({ length: work.lastBlock + 1 }, (_, i) => i));
		for (let i = 1; i < blocks.length; i++) expect(blocks[i]?.parent_hash).toBe(blocks[i - 1]?.hash);
	});

	it("writes every transaction with its receipt fields", async () => {
		const txs = await views().rows(
			"SELECT transaction_hash, block_number, transaction_index, from_address, to_address, value, status, contract_address, gas_used, effective_gas_price, fee FROM transactions ORDER BY id",
		);
		expect(txs).toHaveLength(work.txs.length);
		const byHash = new Map(txs.map((t) => [t.transaction_hash, t]));
		for (const tx of work.txs) {
			const row = byHash.get(tx.hash);
			expect(row, tx.label).toMatchObject({
				block_number: String(tx.blockNumber),
				transaction_index: tx.transactionIndex,
				from_address: tx.from,
				to_address: tx.to,
				value: tx.value,
				status: tx.status === "success" ? 1 : 0,
				contract_address: tx.contractAddress,
			});
			expect(BigInt(row?.fee as string), tx.label).toBe(
				BigInt(row?.gas_used as string) * BigInt(row?.effective_gas_price as string),
			);
		}
		const multi = txs.filter((t) => Number(t.block_number) === work.expected.multiTxBlock.number);
		expect(multi.map((t) => t.transaction_hash)).toEqual(work.expected.multiTxBlock.txHashes);
		expect(multi.map((t) => t.transaction_index)).toEqual(multi.map((_, i) => i));
	});

	it("derives exactly the expected transfers, with exact uint256 values", async () => {
		const rows = await views().rows(`SELECT ${TRANSFER_COLUMNS} FROM transfers ORDER BY id`);
		expect(rows).toEqual(expectedTransferRows());
		// The workload moves ERC-20 amounts above 2^128 and mints above 2^255.
		expect(rows.some((r) => r.token_standard === "erc20" && BigInt(r.value as string) > 2n ** 128n)).toBe(true);
	});

	it("lists no transfer for the reverted transaction, the reverted inner frame or odd logs", async () => {
		const { revertedTxHash, innerRevertTxHash, oddLogTxHash, oddLogCount } = work.expected;
		const of = (hash: string) =>
			views().rows("SELECT token_standard, value FROM transfers WHERE transaction_hash = $hash", { hash });
		expect(await of(revertedTxHash)).toEqual([]);
		const inner = work.txs.find((t) => t.hash === innerRevertTxHash);
		expect(await of(innerRevertTxHash)).toEqual([{ token_standard: "native", value: inner?.value }]);
		expect(await of(oddLogTxHash)).toEqual([]);
		const oddLogs = await views().rows("SELECT topic0 FROM logs WHERE transaction_hash = $hash", {
			hash: oddLogTxHash,
		});
		expect(oddLogs).toHaveLength(oddLogCount);
		const revertedTraces = await views().rows("SELECT DISTINCT status FROM traces WHERE transaction_hash = $hash", {
			hash: revertedTxHash,
		});
		expect(revertedTraces).toEqual([{ status: 0 }]);
	});

	it("lists every contract creation, CREATE and CREATE2, top-level deploys included", async () => {
		const rows = await views().rows(
			"SELECT transaction_hash, contract_address, caller, origin, value, op_code FROM contract_creations ORDER BY id",
		);
		expect(rows).toEqual(
			work.expected.creations.map((c) => ({
				transaction_hash: c.txHash,
				contract_address: c.contract,
				caller: c.caller,
				origin: c.origin,
				value: c.value,
				op_code: c.opCode,
			})),
		);
	});

	it("lists the self-destruct with caller, beneficiary and value", async () => {
		const rows = await views().rows(
			"SELECT transaction_hash, contract_address, caller, beneficiary, value FROM self_destructs ORDER BY id",
		);
		expect(rows).toEqual(
			work.expected.selfDestructs.map((s) => ({
				transaction_hash: s.txHash,
				contract_address: s.contract,
				caller: s.caller,
				beneficiary: s.beneficiary,
				value: s.value,
			})),
		);
	});

	it("gives every item a unique id that sorts in chain order", async () => {
		for (const d of ["transactions", "logs", "traces", "transfers", "contract_creations", "self_destructs"]) {
			const [r] = await views().rows(
				`SELECT count(*) = count(DISTINCT id) AS uniq, bool_and(id >= prev) AS sorted FROM (SELECT id, lag(id, 1, '') OVER (ORDER BY block_number, transaction_index, id) AS prev FROM ${d})`,
			);
			expect(r, d).toEqual({ uniq: true, sorted: true });
		}
	});
});

describe("both trace sources", () => {
	it("yield the same frames (type, from, to, value, status) and derived datasets", async () => {
		const frames =
			"SELECT id, trace_type, call_type, from_address, to_address, value, status, trace_address FROM traces ORDER BY id";
		expect(await geth.rows(frames)).toEqual(await parity.rows(frames));
		for (const d of ["transfers", "contract_creations", "self_destructs"]) {
			const all = `SELECT * EXCLUDE (${d === "contract_creations" ? "gas_used" : "id"}) FROM ${d} ORDER BY id`;
			expect(await geth.rows(all), d).toEqual(await parity.rows(all));
		}
	});
});

describe("parent hashes chain onto stored ranges", () => {
	it("refuses to append a range whose parent is not the stored tip", async () => {
		const dir = join(root, "chained");
		await backfillInto(dir, anvil.url, CHAIN, { from: 0, to: 10, traces: "off" });
		const path = join(dir, `eip155-${CHAIN}`, "_manifest.json");
		const manifest = JSON.parse(readFileSync(path, "utf8"));
		manifest.chunks[0].last_hash = `0x${"ee".repeat(32)}`;
		writeFileSync(path, JSON.stringify(manifest));
		const err = await backfillInto(dir, anvil.url, CHAIN, { from: 11, to: 12, traces: "off" }).catch((e: unknown) => e);
		expect((err as { code?: string }).code).toBe("REORG_BELOW_STORED");
		expect((err as Error).message).toContain("differs from stored block 10");
	});
});
