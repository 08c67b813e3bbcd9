/**
 * The recorded mainnet responses are what a node said, not something edited by hand: every full
 * block's hash is recomputed from its header (keccak256 of the RLP header, pre-London layout),
 * every transaction's hash from its signed fields, and its sender recovered from the signature.
 * A changed digit anywhere in a header or a transaction fails here before any decoding test
 * could be fooled by it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Hex, keccak256, recoverTransactionAddress, serializeTransaction, toRlp } from "viem";
import { describe, expect, it } from "vitest";
import { MAINNET_FIXTURES } from "../fixtures/mainnet.js";

type Json = Record<string, unknown>;
const rpcDir = fileURLToPath(new URL("rpc/", MAINNET_FIXTURES));
const read = (name: string): Json => JSON.parse(readFileSync(`${rpcDir}${name}`, "utf8")).result as Json;
const fullBlocks = readdirSync(rpcDir).filter((f) => /^eth_getBlockByNumber_0x[0-9a-f]+_true\.json$/.test(f));

/** RLP's integer form: big-endian bytes without leading zeros (zero is the empty string). */
const rlpInt = (hex: unknown): Hex => {
	const n = BigInt(hex as string);
	if (n === 0n) return "0x";
	const s = n.toString(16);
	return `0x${s.length % 2 ? `0${s}` : s}`;
};

describe("recorded mainnet responses are genuine", () => {
	it("holds the full blocks the README lists", () => {
		expect(fullBlocks.length).toBeGreaterThanOrEqual(5);
	});

	for (const file of fullBlocks) {
		it(`${file}: the header hashes to the block hash and every transaction to its hash and sender`, async () => {
			const b = read(file);
			const header = [
				b.parentHash,
				b.sha3Uncles,
				b.miner,
				b.stateRoot,
				b.transactionsRoot,
				b.receiptsRoot,
				b.logsBloom,
				rlpInt(b.difficulty),
				rlpInt(b.number),
				rlpInt(b.gasLimit),
				rlpInt(b.gasUsed),
				rlpInt(b.timestamp),
				b.extraData,
				b.mixHash,
				b.nonce,
			] as Hex[];
			expect(keccak256(toRlp(header))).toBe(b.hash);
			for (const tx of b.transactions as Json[]) {
				const signed = serializeTransaction(
					{
						type: "legacy",
						nonce: Number(tx.nonce),
						gasPrice: BigInt(tx.gasPrice as string),
						gas: BigInt(tx.gas as string),
						to: (tx.to as Hex | null) ?? undefined,
						value: BigInt(tx.value as string),
						data: tx.input as Hex,
					},
					{ r: tx.r as Hex, s: tx.s as Hex, v: BigInt(tx.v as string) },
				);
				expect(keccak256(signed)).toBe(tx.hash);
				expect((await recoverTransactionAddress({ serializedTransaction: signed })).toLowerCase()).toBe(tx.from);
			}
		});
	}

	it("every recorded receipt belongs to a transaction of a recorded block", () => {
		const txBlocks = new Map<string, string>();
		for (const f of fullBlocks)
			for (const tx of read(f).transactions as Json[]) txBlocks.set(tx.hash as string, tx.blockHash as string);
		const receipts = readdirSync(rpcDir).filter((f) => f.startsWith("eth_getTransactionReceipt_"));
		expect(receipts.length).toBeGreaterThan(0);
		for (const f of receipts) {
			const r = read(f);
			expect(txBlocks.get(r.transactionHash as string), f).toBe(r.blockHash);
		}
	});
});
