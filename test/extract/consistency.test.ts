import { describe, expect, it } from "vitest";
import { extractBlock } from "../../src/extract/extract-block.js";
import type { RpcBlock, RpcReceipt } from "../../src/rpc/types.js";
import { ConsistencyError } from "../../src/util/errors.js";
import { loadRpc } from "../fixtures/mainnet.js";

/** Mainnet block 483920 (0x76250) with its four recorded receipts, tampered one way per case. */
function bundle() {
	const block = loadRpc<RpcBlock>("eth_getBlockByNumber_0x76250_true.json");
	const receipts = block.transactions.map((tx) => loadRpc<RpcReceipt>(`eth_getTransactionReceipt_${tx.hash}.json`));
	return { block, receipts, traces: null };
}

describe("extractBlock refuses responses that disagree with each other", () => {
	it("accepts the untouched block", () => {
		expect(extractBlock(bundle()).transactions).toHaveLength(4);
	});

	it.each([
		["a missing receipt", (b: ReturnType<typeof bundle>) => b.receipts.pop(), /3 receipts for 4 transactions/],
		[
			"receipts in another order",
			(b: ReturnType<typeof bundle>) => b.receipts.reverse(),
			/receipt 0 is for 0x0528.*expected 0x04cb/,
		],
		[
			"a receipt from another block",
			(b: ReturnType<typeof bundle>) => {
				(b.receipts[1] as RpcReceipt).blockHash = `0x${"11".repeat(32)}`;
			},
			/receipt of 0xcea6.* names block 0x1111/,
		],
		[
			"a log from another block",
			(b: ReturnType<typeof bundle>) => {
				const log = b.receipts[0]?.logs[0];
				if (log) log.blockHash = `0x${"22".repeat(32)}`;
			},
			/a log of 0x04cb.* names block 0x2222/,
		],
		[
			"a geth trace list of the wrong length",
			(b: ReturnType<typeof bundle>) => Object.assign(b, { traces: { format: "geth", data: [] } }),
			/0 geth traces for 4 transactions/,
		],
	])("rejects %s", (_name, tamper, message) => {
		const b = bundle();
		tamper(b);
		const err = (() => {
			try {
				extractBlock(b);
			} catch (e) {
				return e;
			}
		})();
		expect(err).toBeInstanceOf(ConsistencyError);
		expect((err as Error).message).toMatch(message);
	});
});
