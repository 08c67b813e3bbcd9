/**
 * A block's record (records.ts blockRecord) as JSON text made by DuckDB, for pages of many
 * blocks: a block is a wide row (20 columns, six 32-byte hashes and a 256-byte bloom), and
 * turning 1,000 of them into JavaScript objects, shaping them and writing them out again took
 * most of a 1,000-block page's time (BENCHMARKS.md "twelfth figures"). DuckDB's `to_json` writes
 * the same text: the same keys in the same order, uint256 text and the nonce as exact JSON
 * integers (cast to JSON, never through a double), a missing integer as blockRecord's `Number`
 * makes it (0; `size` null). test/api/block-json.test.ts holds the two equal, edge values included.
 * What it assumes of the files, as this project's writer makes them: uint256 columns hold
 * canonical decimal text (`::JSON` refuses `007` or `0x1a`, which BigInt took), text columns hex
 * (DuckDB escapes a control character as `\u001F`, JavaScript as `\u001f`), integers within 2^53
 * (above it `Number` rounds; DuckDB writes the exact value).
 * A fixed SQL expression over the blocks' own columns: no request value is in it.
 */
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
