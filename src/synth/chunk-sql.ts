import type { DatasetName } from "../extract/rows.js";
import { TRANSFER_SINGLE_TOPIC, TRANSFER_TOPIC } from "../extract/token-transfers.js";
import { SCHEMAS } from "../store/format/schema.js";
import { BLOCK_SECONDS, GENESIS_TIMESTAMP, PEAK_TXS_PER_BLOCK, RAMP_EXPONENT, type Scale } from "./scales.js";

/**
 * The synthetic chain as DuckDB SQL. Every value is a hash of its position (block, transaction,
 * log), never random(): the same scale gives the same bytes on every run and every thread
 * count, and any chunk can be generated without the ones before it.
 *
 * Building blocks (macros):
 * - u(key, salt): uniform in [0, 1).
 * - pick(x, n): log-uniform index in [0, n): index 0 gets ln 2 / ln n of all picks, so a few
 *   accounts are exchanges with millions of transfers and most see a handful.
 * - h32 / account / contract / factory: 32-byte hashes and 20-byte addresses from an index.
 */
export function macrosSql(scale: Scale): string {
	return `
CREATE OR REPLACE MACRO u(k, salt) AS hash(k, salt) / 18446744073709551616.0;
CREATE OR REPLACE MACRO pick(x, n) AS least(n - 1, floor(exp(x * ln(n))) - 1)::BIGINT;
CREATE OR REPLACE MACRO h32(tag, k) AS '0x' || md5(tag || k::VARCHAR) || md5(tag || '/' || k::VARCHAR);
CREATE OR REPLACE MACRO addr20(tag, k) AS '0x' || md5(tag || k::VARCHAR) || left(md5(tag || '/' || k::VARCHAR), 8);
CREATE OR REPLACE MACRO account(x) AS addr20('eoa', pick(x, ${scale.accounts}));
CREATE OR REPLACE MACRO contract(x) AS addr20('contract', pick(x, ${scale.contracts}));
CREATE OR REPLACE MACRO factory(x) AS addr20('factory', pick(x, ${scale.factories}));
CREATE OR REPLACE MACRO word(a) AS '0x000000000000000000000000' || substr(a, 3);
CREATE OR REPLACE MACRO hex64(v) AS lpad(lower(hex(v)), 64, '0');
CREATE OR REPLACE MACRO item_id(b, i, o) AS printf('%016x-%04x-%08x', b, i, o);
CREATE OR REPLACE MACRO block_hash(b) AS h32('block', b);
`;
}

/**
 * Temp tables for blocks [from, to]: s_block (one row a block) and s_tx (one a transaction,
 * with everything its logs, transfers and traces derive from). `from`/`to` are our own integers.
 */
export function chunkTablesSql(scale: Scale, from: number, to: number): string {
	return `
CREATE OR REPLACE TEMP TABLE s_block AS
SELECT b, floor(${PEAK_TXS_PER_BLOCK} * pow((b + 1) / ${scale.blocks}, ${RAMP_EXPONENT}) + u(b, 'ntx'))::INTEGER AS n_tx
FROM range(${from}, ${to + 1}) r(b);

CREATE OR REPLACE TEMP TABLE s_tx AS
WITH t AS (SELECT b, unnest(range(n_tx)) AS i FROM s_block),
k AS (SELECT b, i, b * 65536 + i AS k FROM t)
SELECT b, i, k,
	h32('tx', k) AS tx_hash,
	account(u(k, 'from')) AS from_address,
	CASE WHEN u(k, 'to_kind') < 0.7 THEN contract(u(k, 'to')) ELSE account(u(k, 'to')) END AS to_address,
	CASE WHEN u(k, 'has_value') < 0.4 THEN (hash(k, 'value') % 1000000000000000000)::BIGINT + 1 ELSE 0 END AS value,
	(hash(k, 'n_logs') % 7)::INTEGER AS n_logs,
	(hash(k, 'n_int') % 5)::INTEGER AS n_int,
	(hash(k, 'create') % 200 = 0)::INTEGER AS creates,
	(hash(k, 'destruct') % 20000 = 0)::INTEGER AS destructs,
	21000 + (hash(k, 'gas') % 200000)::BIGINT AS gas_used,
	1000000000 + (hash(k, 'tip') % 3000000000)::BIGINT AS tip,
	coalesce(sum(hash(k, 'n_logs') % 7) OVER (PARTITION BY b ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::INTEGER AS log_base,
	sum(21000 + (hash(k, 'gas') % 200000)) OVER (PARTITION BY b ORDER BY i)::BIGINT AS cumulative_gas_used
FROM k;

CREATE OR REPLACE TEMP TABLE s_log AS
WITH l AS (SELECT *, unnest(range(n_logs)) AS j FROM s_tx)
SELECT *, log_base + j AS log_index, u(hash(k, j), 'kind') AS kind,
	CASE WHEN u(hash(k, j), 'own') < 0.5 THEN from_address ELSE account(u(hash(k, j), 'sender')) END AS sender,
	account(u(hash(k, j), 'recipient')) AS recipient,
	contract(u(hash(k, j), 'token')) AS token,
	(hash(k, j, 'amount') % 100000000000000000000)::HUGEINT AS amount,
	(hash(k, j, 'token_id') % 100000)::BIGINT AS token_id
FROM l;
`;
}

const BASE_FEE = 1_000_000_000;
/** Token standard of a log by its kind in [0, 1): 85% transfers (mostly ERC-20), 15% other events. */
const KIND = { erc20: 0.72, erc721: 0.8, erc1155: 0.85 };
const OTHER_TOPIC = "'0x' || md5('event' || (hash(k, j) % 40)::VARCHAR) || md5('event/' || (hash(k, j) % 40)::VARCHAR)";

/** Column expressions per dataset over the temp tables; columns not named are NULL. */
function columnsOf(dataset: DatasetName): { from: string; columns: Record<string, string> } {
	const txContext = (tx: string) => ({
		block_number: `${tx}.b`,
		block_hash: `block_hash(${tx}.b)`,
		block_timestamp: `${GENESIS_TIMESTAMP} + ${tx}.b * ${BLOCK_SECONDS}`,
		transaction_index: `${tx}.i`,
		transaction_hash: `${tx}.tx_hash`,
	});
	switch (dataset) {
		case "blocks":
			return {
				from: "s_block",
				columns: {
					number: "b",
					hash: "block_hash(b)",
					parent_hash: `CASE WHEN b = 0 THEN '0x${"0".repeat(64)}' ELSE block_hash(b - 1) END`,
					timestamp: `${GENESIS_TIMESTAMP} + b * ${BLOCK_SECONDS}`,
					nonce: "0",
					mix_hash: "h32('mix', b)",
					sha3_uncles: "'0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347'",
					logs_bloom: `'0x${"0".repeat(512)}'`,
					transactions_root: "h32('txroot', b)",
					state_root: "h32('state', b)",
					receipts_root: "h32('receipts', b)",
					miner: "addr20('builder', hash(b, 'miner') % 50)",
					difficulty: "'0'",
					size: "1000 + n_tx * 180",
					extra_data: "'0x6265617665726275696c642e6f7267'",
					gas_limit: "30000000",
					gas_used: "n_tx * 120500",
					base_fee_per_gas: `'${BASE_FEE}'`,
					transaction_count: "n_tx",
					uncle_count: "0",
				},
			};
		case "transactions":
			return {
				from: "s_tx t",
				columns: {
					id: "item_id(b, i, 0)",
					...txContext("t"),
					nonce: "hash(k, 'nonce') % 100000",
					from_address: "from_address",
					to_address: "to_address",
					value: "value::VARCHAR",
					input: "CASE WHEN value > 0 THEN '0x' ELSE '0xa9059cbb' || word(to_address)[3:] || hex64(hash(k, 'arg')) END",
					gas: "gas_used + 30000",
					gas_price: `(${BASE_FEE} + tip)::VARCHAR`,
					max_fee_per_gas: `(${BASE_FEE} * 2 + tip)::VARCHAR`,
					max_priority_fee_per_gas: "tip::VARCHAR",
					transaction_type: "2",
					tx_chain_id: "'1'",
					r: "h32('r', k)",
					s: "h32('s', k)",
					v: "(hash(k, 'v') % 2)::VARCHAR",
					status: "1",
					gas_used: "gas_used",
					cumulative_gas_used: "cumulative_gas_used",
					effective_gas_price: `(${BASE_FEE} + tip)::VARCHAR`,
					fee: `(gas_used::HUGEINT * (${BASE_FEE} + tip))::VARCHAR`,
					logs_count: "n_logs",
				},
			};
		case "logs":
			return {
				from: "s_log l",
				columns: {
					id: "item_id(b, i, log_index)",
					...txContext("l"),
					log_index: "log_index",
					origin: "from_address",
					address: "token",
					topic_count: `CASE WHEN kind < ${KIND.erc20} THEN 3 WHEN kind < ${KIND.erc1155} THEN 4 ELSE 2 END`,
					topic0: `CASE WHEN kind < ${KIND.erc721} THEN '${TRANSFER_TOPIC}' WHEN kind < ${KIND.erc1155} THEN '${TRANSFER_SINGLE_TOPIC}' ELSE ${OTHER_TOPIC} END`,
					topic1: `CASE WHEN kind < ${KIND.erc721} THEN word(sender) WHEN kind < ${KIND.erc1155} THEN word(from_address) ELSE word(sender) END`,
					topic2: `CASE WHEN kind < ${KIND.erc721} THEN word(recipient) WHEN kind < ${KIND.erc1155} THEN word(sender) END`,
					topic3: `CASE WHEN kind < ${KIND.erc20} THEN NULL WHEN kind < ${KIND.erc721} THEN '0x' || hex64(token_id) WHEN kind < ${KIND.erc1155} THEN word(recipient) END`,
					data: `CASE WHEN kind < ${KIND.erc20} THEN '0x' || hex64(amount) WHEN kind < ${KIND.erc721} THEN '0x' WHEN kind < ${KIND.erc1155} THEN '0x' || hex64(token_id) || hex64(amount % 1000 + 1) ELSE '0x' || hex64(amount) END`,
				},
			};
		case "transfers":
			return {
				from: `(
					SELECT b, i, k, tx_hash, from_address AS origin, 0 AS ordinal, 'native' AS asset_type, 'native' AS token_standard,
						NULL AS contract, from_address AS sender, to_address AS recipient, value::VARCHAR AS value, NULL AS token_id,
						NULL AS log_index, 0 AS trace_index
					FROM s_tx WHERE value > 0
					UNION ALL
					SELECT b, i, k, tx_hash, from_address, f.n AS ordinal, 'native', 'native', NULL, to_address,
						account(u(hash(k, f.n), 'internal')), (hash(k, f.n, 'internal_value') % 10000000000000000 + 1)::VARCHAR,
						NULL, NULL, f.n
					FROM (SELECT *, unnest(range(1, n_int + 1)) AS n FROM s_tx) f
					UNION ALL
					SELECT b, i, k, tx_hash, from_address, ${0x8000_0000} + log_index,
						CASE WHEN kind < ${KIND.erc20} THEN 'ft' ELSE 'nft' END,
						CASE WHEN kind < ${KIND.erc20} THEN 'erc20' WHEN kind < ${KIND.erc721} THEN 'erc721' ELSE 'erc1155' END,
						token, sender, recipient,
						CASE WHEN kind < ${KIND.erc20} THEN amount::VARCHAR WHEN kind < ${KIND.erc721} THEN NULL ELSE (amount % 1000 + 1)::VARCHAR END,
						CASE WHEN kind < ${KIND.erc20} THEN NULL ELSE token_id::VARCHAR END,
						log_index, NULL
					FROM s_log WHERE kind < ${KIND.erc1155}
				) t`,
				columns: {
					id: "item_id(b, i, ordinal)",
					...txContext("t"),
					origin: "origin",
					asset_type: "asset_type",
					token_standard: "token_standard",
					contract: "contract",
					sender: "sender",
					recipient: "recipient",
					value: "value",
					token_id: "token_id",
					operator: "CASE WHEN token_standard = 'erc1155' THEN origin END",
					log_index: "log_index",
					trace_index: "trace_index",
				},
			};
		case "traces":
			return {
				from: `(
					SELECT *, 0 AS n, 'call' AS trace_type, from_address AS f, to_address AS t, value::VARCHAR AS v, [] AS path,
						n_int + creates + destructs AS subtraces FROM s_tx
					UNION ALL
					SELECT * EXCLUDE (n), n, 'call', to_address, account(u(hash(k, n), 'internal')),
						(hash(k, n, 'internal_value') % 10000000000000000 + 1)::VARCHAR, [n - 1], 0
					FROM (SELECT *, unnest(range(1, n_int + 1)) AS n FROM s_tx)
					UNION ALL
					SELECT *, n_int + 1, 'create', factory(u(k, 'factory')), addr20('created', k), '0', [n_int], 0 FROM s_tx WHERE creates = 1
					UNION ALL
					SELECT *, n_int + creates + 1, 'suicide', addr20('doomed', k), account(u(k, 'heir')), '0', [n_int + creates], 0
					FROM s_tx WHERE destructs = 1
				) t`,
				columns: {
					id: "item_id(b, i, n)",
					...txContext("t"),
					origin: "from_address",
					trace_index: "n",
					trace_address: "path",
					subtraces: "subtraces",
					trace_type: "trace_type",
					call_type: "CASE WHEN trace_type = 'call' THEN 'call' END",
					from_address: "f",
					to_address: "t",
					value: "v",
					input: "'0x'",
					output: "'0x'",
					gas: "gas_used + 30000",
					gas_used: "CASE WHEN n = 0 THEN gas_used ELSE 2300 END",
					status: "1",
				},
			};
		case "contract_creations":
			return {
				from: "(SELECT *, n_int + 1 AS n FROM s_tx WHERE creates = 1) t",
				columns: {
					id: "item_id(b, i, n)",
					...txContext("t"),
					origin: "from_address",
					contract_address: "addr20('created', k)",
					caller: "factory(u(k, 'factory'))",
					value: "'0'",
					op_code: "CASE WHEN hash(k, 'op') % 2 = 0 THEN 'CREATE' ELSE 'CREATE2' END",
					trace_index: "n",
					trace_address: "[n_int]",
					init_code_hash: "h32('init', hash(k, 'code') % 500)",
					bytecode: "'0x6080604052' || md5('code' || (hash(k, 'code') % 500)::VARCHAR)",
					gas_used: "100000 + hash(k, 'create_gas') % 900000",
				},
			};
		case "self_destructs":
			return {
				from: "(SELECT *, n_int + creates + 1 AS n FROM s_tx WHERE destructs = 1) t",
				columns: {
					id: "item_id(b, i, n)",
					...txContext("t"),
					origin: "from_address",
					contract_address: "addr20('doomed', k)",
					caller: "to_address",
					beneficiary: "account(u(k, 'heir'))",
					value: "'0'",
					trace_index: "n",
					trace_address: "[n_int + creates]",
				},
			};
	}
}

/** SELECT of one dataset's rows for the current chunk tables: the schema's columns, in its order and types. */
export function datasetSelectSql(dataset: DatasetName): string {
	const { from, columns } = columnsOf(dataset);
	const schema: Record<string, readonly [string, string]> = SCHEMAS[dataset];
	for (const name of Object.keys(columns)) {
		if (!(name in schema)) throw new Error(`synth: ${dataset} has no column ${name}`);
	}
	const list = Object.entries(schema).map(
		([name, [type]]) => `CAST(${columns[name] ?? "NULL"} AS ${type}) AS "${name}"`,
	);
	return `SELECT ${list.join(", ")} FROM ${from}`;
}
