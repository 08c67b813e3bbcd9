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
 * with everything its logs, transfers and traces derive from), each in chain order: every
 * dataset's SELECT keeps that order (DuckDB keeps a single table's row order through SELECT,
 * WHERE and unnest), which is its file's id order, so no dataset is sorted (a sort of chunk 10's
 * 5.4M transfers at M ran a 5 GB DuckDB out of memory). `from`/`to` are our own integers.
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
FROM k
ORDER BY b, i;
`;
}

/**
 * The rows of `rows` (s_tx's columns and j, the log's position in its transaction) with the
 * log's own columns, those of rows where `isLog` holds (the others' are NULL and not computed).
 */
const withLogColumns = (rows: string, isLog = "true") => {
	const log = (expr: string) => `CASE WHEN ${isLog} THEN ${expr} END`;
	return `(SELECT *, ${log("log_base + j")} AS log_index, ${log("u(hash(k, j), 'kind')")} AS kind,
	${log("CASE WHEN u(hash(k, j), 'own') < 0.5 THEN from_address ELSE account(u(hash(k, j), 'sender')) END")} AS sender,
	${log("account(u(hash(k, j), 'recipient'))")} AS recipient,
	${log("contract(u(hash(k, j), 'token'))")} AS token,
	${log("(hash(k, j, 'amount') % 100000000000000000000)::HUGEINT")} AS amount,
	${log("(hash(k, j, 'token_id') % 100000)::BIGINT")} AS token_id
FROM ${rows})`;
};

/** A transaction's logs: s_tx's columns, j and the log's own. */
const LOGS = withLogColumns("(SELECT *, unnest(range(n_logs)) AS j FROM s_tx)");

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
				from: `${LOGS} l`,
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
			// Per transaction, in ordinal order: its native transfer (r = 0, when it carries
			// value), its internal calls' (r = 1..n_int), its token transfers (the logs after).
			return {
				from: `(
					SELECT b, i, k, tx_hash, from_address AS origin,
						CASE WHEN src = 'native' THEN 0 WHEN src = 'internal' THEN r ELSE ${0x8000_0000} + log_index END AS ordinal,
						CASE WHEN src <> 'token' THEN 'native' WHEN kind < ${KIND.erc20} THEN 'ft' ELSE 'nft' END AS asset_type,
						CASE WHEN src <> 'token' THEN 'native' WHEN kind < ${KIND.erc20} THEN 'erc20' WHEN kind < ${KIND.erc721} THEN 'erc721' ELSE 'erc1155' END AS token_standard,
						CASE WHEN src = 'token' THEN token END AS contract,
						CASE WHEN src = 'native' THEN from_address WHEN src = 'internal' THEN to_address ELSE sender END AS sender,
						CASE WHEN src = 'native' THEN to_address WHEN src = 'internal' THEN account(u(hash(k, r), 'internal')) ELSE recipient END AS recipient,
						CASE WHEN src = 'native' THEN value::VARCHAR
							WHEN src = 'internal' THEN (hash(k, r, 'internal_value') % 10000000000000000 + 1)::VARCHAR
							WHEN kind < ${KIND.erc20} THEN amount::VARCHAR WHEN kind < ${KIND.erc721} THEN NULL ELSE (amount % 1000 + 1)::VARCHAR END AS value,
						CASE WHEN src = 'token' AND kind >= ${KIND.erc20} THEN token_id::VARCHAR END AS token_id,
						CASE WHEN src = 'token' THEN log_index END AS log_index,
						CASE WHEN src = 'native' THEN 0 WHEN src = 'internal' THEN r END AS trace_index
					FROM (
						SELECT *, CASE WHEN r = 0 THEN 'native' WHEN r <= n_int THEN 'internal' ELSE 'token' END AS src
						FROM ${withLogColumns("(SELECT *, r - n_int - 1 AS j FROM (SELECT *, unnest(range(1 + n_int + n_logs)) AS r FROM s_tx))", "j >= 0")}
					)
					WHERE CASE WHEN src = 'native' THEN value > 0 WHEN src = 'internal' THEN true ELSE kind < ${KIND.erc1155} END
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
			// Per transaction, in trace_index order: the top call (n = 0), its internal calls
			// (1..n_int), then the contract it creates and the one it destroys, if any.
			return {
				from: `(
					SELECT *,
						CASE WHEN frame = 'create' THEN 'create' WHEN frame = 'suicide' THEN 'suicide' ELSE 'call' END AS trace_type,
						CASE WHEN frame = 'top' THEN from_address WHEN frame = 'internal' THEN to_address
							WHEN frame = 'create' THEN factory(u(k, 'factory')) ELSE addr20('doomed', k) END AS f,
						CASE WHEN frame = 'top' THEN to_address WHEN frame = 'internal' THEN account(u(hash(k, n), 'internal'))
							WHEN frame = 'create' THEN addr20('created', k) ELSE account(u(k, 'heir')) END AS t,
						CASE WHEN frame = 'top' THEN value::VARCHAR
							WHEN frame = 'internal' THEN (hash(k, n, 'internal_value') % 10000000000000000 + 1)::VARCHAR ELSE '0' END AS v,
						CASE WHEN n = 0 THEN []::INTEGER[] ELSE [n - 1] END AS path,
						CASE WHEN n = 0 THEN n_int + creates + destructs ELSE 0 END AS subtraces
					FROM (
						SELECT *, CASE WHEN n = 0 THEN 'top' WHEN n <= n_int THEN 'internal' WHEN n = n_int + 1 AND creates = 1 THEN 'create' ELSE 'suicide' END AS frame
						FROM (SELECT *, unnest(range(1 + n_int + creates + destructs)) AS n FROM s_tx)
					)
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
