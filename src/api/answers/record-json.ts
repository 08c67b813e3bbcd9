/**
 * Records as JSON text made by DuckDB, for pages of many items (blocks, events): turning 1,000
 * wide rows into JavaScript objects, shaping them and writing them out again took most of such a
 * page's time (BENCHMARKS.md "twelfth figures"). DuckDB's `to_json` writes the same text as the
 * record shapes of records.ts (blockRecord, logRecord) with stringifyExact: the same keys in the
 * same order, uint256 text and the nonce as exact JSON integers (cast to JSON, never through a
 * double), a missing integer as the shapes' `Number` makes it (0; `n` keeps null).
 * test/api/record-json.test.ts holds each equal to its shape, edge values included.
 * What they assume of the files, as this project's writer makes them: uint256 columns hold
 * canonical decimal text (`::JSON` refuses `007` or `0x1a`, which BigInt took), text columns hex
 * (DuckDB escapes a control character as `\u001F`, JavaScript as `\u001f`), integers within 2^53
 * (above it `Number` rounds; DuckDB writes the exact value).
 * Fixed SQL expressions over the datasets' own columns: no request value is in them.
 */

/** blockRecord's text, over the blocks' columns. */
export const BLOCK_RECORD_JSON = `to_json({
	'hash': hash,
	'parent_hash': parent_hash,
	'number': coalesce(number, 0),
	'timestamp': coalesce(timestamp, 0),
	'header': {
		'nonce': nonce::VARCHAR::JSON,
		'gas_used': coalesce(gas_used, 0),
		'mix_hash': mix_hash,
		'gas_limit': coalesce(gas_limit, 0),
		'difficulty': difficulty::JSON,
		'extra_data': extra_data,
		'logs_bloom': logs_bloom,
		'state_root': state_root,
		'sha3_uncles': sha3_uncles,
		'receipts_root': receipts_root,
		'total_difficulty': total_difficulty::JSON,
		'transactions_root': transactions_root
	},
	'ghost': false,
	'miner': miner,
	'base_fee_per_gas': base_fee_per_gas,
	'size': size,
	'transaction_count': coalesce(transaction_count, 0)
})::VARCHAR`;

/** logRecord's text, over the logs' columns. */
export const LOG_RECORD_JSON = `to_json({
	'id': id,
	'tx_hash': transaction_hash,
	'block_hash': block_hash,
	'block_number': coalesce(block_number, 0),
	'timestamp': coalesce(block_timestamp, 0),
	'origin': origin,
	'contract': address,
	'op_code': 'LOG' || coalesce(topic_count, 0),
	'topic_0': topic0,
	'topic_1': topic1,
	'topic_2': topic2,
	'topic_3': topic3,
	'log_data': data,
	'log_index': coalesce(log_index, 0)
})::VARCHAR`;
