import { dataWords, wordToAddress, wordToDecimal } from "../util/hex.js";
import { itemId, TOKEN_ORDINAL_BASE } from "./ids.js";
import type { LogRow, TransferRow } from "./rows.js";

/** keccak256 of the event signatures (fixed by the standards). */
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
export const TRANSFER_SINGLE_TOPIC = "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62";
export const TRANSFER_BATCH_TOPIC = "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb";

/** ABI offsets and lengths above this are nonsense in a log: reject rather than allocate. */
const MAX_BATCH = 10_000;

type TokenFields = Pick<
	TransferRow,
	| "asset_type"
	| "token_standard"
	| "sender"
	| "recipient"
	| "value"
	| "token_id"
	| "batch_values"
	| "batch_token_ids"
	| "operator"
>;

/**
 * Token transfers from logs: ERC-20 `Transfer` (3 topics, one data word), ERC-721 `Transfer`
 * (4 topics, no data), ERC-1155 `TransferSingle` and `TransferBatch`. A log that carries one of
 * these topics but not the standard's shape (wrong topic count, malformed data, non-address
 * topics) is left out, never guessed at.
 */
export function decodeTokenTransfers(logs: LogRow[]): TransferRow[] {
	const out: TransferRow[] = [];
	for (const log of logs) {
		const fields = decodeTokenLog(log);
		if (!fields) continue;
		out.push({
			id: itemId(log.block_number, log.transaction_index, TOKEN_ORDINAL_BASE + log.log_index),
			block_number: log.block_number,
			block_hash: log.block_hash,
			block_timestamp: log.block_timestamp,
			transaction_index: log.transaction_index,
			transaction_hash: log.transaction_hash,
			origin: log.origin,
			contract: log.address,
			log_index: log.log_index,
			trace_index: null,
			...fields,
		});
	}
	return out;
}

function decodeTokenLog(log: LogRow): TokenFields | null {
	const words = dataWords(log.data);
	if (words == null) return null;
	if (log.topic0 === TRANSFER_TOPIC) {
		const sender = wordToAddress(log.topic1);
		const recipient = wordToAddress(log.topic2);
		if (sender == null || recipient == null) return null;
		const base = { sender, recipient, batch_values: null, batch_token_ids: null, operator: null };
		if (log.topic_count === 3 && words.length === 1 && words[0] !== undefined) {
			return { ...base, asset_type: "ft", token_standard: "erc20", value: wordToDecimal(words[0]), token_id: null };
		}
		if (log.topic_count === 4 && words.length === 0 && log.topic3 != null && /^0x[0-9a-f]{64}$/.test(log.topic3)) {
			const tokenId = wordToDecimal(log.topic3.slice(2));
			return { ...base, asset_type: "nft", token_standard: "erc721", value: null, token_id: tokenId };
		}
		return null;
	}
	if (log.topic0 !== TRANSFER_SINGLE_TOPIC && log.topic0 !== TRANSFER_BATCH_TOPIC) return null;
	if (log.topic_count !== 4) return null;
	const operator = wordToAddress(log.topic1);
	const sender = wordToAddress(log.topic2);
	const recipient = wordToAddress(log.topic3);
	if (operator == null || sender == null || recipient == null) return null;
	const base = { asset_type: "nft", token_standard: "erc1155", operator, sender, recipient } as const;
	if (log.topic0 === TRANSFER_SINGLE_TOPIC) {
		if (words.length !== 2 || words[0] === undefined || words[1] === undefined) return null;
		const [id, amount] = [wordToDecimal(words[0]), wordToDecimal(words[1])];
		return { ...base, value: amount, token_id: id, batch_values: null, batch_token_ids: null };
	}
	const ids = abiUintArray(words, 0);
	const amounts = abiUintArray(words, 1);
	if (ids == null || amounts == null || ids.length !== amounts.length) return null;
	return { ...base, value: null, token_id: null, batch_values: amounts, batch_token_ids: ids };
}

/** Reads the `uint256[]` whose head is word `slot` of ABI-encoded data; null when malformed. */
function abiUintArray(words: string[], slot: number): string[] | null {
	const head = words[slot];
	if (head === undefined) return null;
	const offset = BigInt(`0x${head}`);
	if (offset % 32n !== 0n || offset / 32n >= BigInt(words.length)) return null;
	const start = Number(offset / 32n);
	const lengthWord = words[start];
	if (lengthWord === undefined) return null;
	const length = BigInt(`0x${lengthWord}`);
	if (length > BigInt(MAX_BATCH) || start + 1 + Number(length) > words.length) return null;
	return words.slice(start + 1, start + 1 + Number(length)).map(wordToDecimal);
}
