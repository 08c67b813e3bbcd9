/**
 * Our pipeline's own ceiling, apart from the node's:
 * `npm run bench:pipeline [-- --blocks 2000 --txs 150 --templates 20 --partition-size 1000]`.
 *
 * A node's cost is left out by answering from memory: anvil runs the Solidity workload and then
 * `--templates` blocks of mixed activity at `--txs` transactions a block; each of those blocks'
 * `eth_getBlockByNumber` (full transactions), `eth_getBlockReceipts` and `trace_block` answers is
 * recorded once, and anvil is stopped. A local HTTP server then answers blocks 1..`--blocks` by
 * repeating the recorded blocks in turn, renumbered (number, hash, parent hash and timestamp
 * rewritten in the block, its transactions, receipts, logs and traces, so the chain links), from
 * JSON text prepared beforehand: an answer costs the server a string join. The backfill then
 * exports that range into a temp folder as it would from a node, and the figure is what our side
 * costs: HTTP + JSON parsing, extraction, checks, Parquet writing, index files, merges, Delta logs.
 *
 * The server runs in this process (one event loop with the backfill); the time it spent building
 * and sending answers is printed, so it can be taken off. The recorded blocks are anvil's, not
 * mainnet's: the mainnet fixtures in test/fixtures/ethereum-mainnet are 2015-2016 blocks of at most
 * four transactions, and the only modern blocks there are ethereum-etl's CSV output, not RPC
 * answers. Each copy of a block gets its own transaction hashes; addresses, inputs and values repeat
 * across copies (so datasets may compress a little better than a real chain's: bench:backfill's
 * bytes/row, on distinct blocks, is the one to size disks with).
 */

import { createHash } from "node:crypto";
import { readdirSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createBackfill } from "../src/backfill/backfill.js";
import { DATASETS } from "../src/extract/rows.js";
import { createRpcClient } from "../src/rpc/client.js";
import { datasetDir } from "../src/store/format/layout.js";
import { parseChainId } from "../src/util/chain.js";
import { flagUsage, startCli } from "../src/util/cli.js";
import { createLogger } from "../src/util/logger.js";
import { generateActivity, rpcBatch } from "../src/workload/activity.js";
import { startAnvil } from "../src/workload/anvil.js";
import { runWorkload } from "../src/workload/run.js";
import { folderBytes } from "./bench/measure.js";

const options = {
	blocks: { type: "string", default: "2000" },
	txs: { type: "string", default: "150" },
	templates: { type: "string", default: "20" },
	"partition-size": { type: "string", default: "1000" },
	concurrency: { type: "string", default: "8" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage(
			"npm run bench:pipeline -- [--blocks 2000] [--txs 150] [--templates 20] [--partition-size 1000] [--concurrency 8]",
			options,
		),
	}),
	options,
});
const BLOCKS = Number(values.blocks);
const TXS = Number(values.txs);
const TEMPLATES = Number(values.templates);
const CHAIN = "eip155-31337";

// --- record -----------------------------------------------------------------------------------

interface Recorded {
	block: unknown;
	receipts: unknown;
	traces: unknown;
}

async function record(): Promise<Recorded[]> {
	const gasLimit = Math.max(30_000_000, TXS * 500_000 + 1_000_000);
	const anvil = await startAnvil({ chainId: 31337, args: ["--gas-limit", String(gasLimit)] });
	try {
		const work = await runWorkload({ rpcUrl: anvil.url });
		await generateActivity({ rpcUrl: anvil.url, contracts: work.contracts, blocks: TEMPLATES, txsPerBlock: TXS });
		const [headHex] = (await rpcBatch(anvil.url, [{ method: "eth_blockNumber", params: [] }])) as [string];
		const head = Number(headHex);
		const out: Recorded[] = [];
		for (let n = head - TEMPLATES + 1; n <= head; n++) {
			const hex = `0x${n.toString(16)}`;
			const [block, receipts, traces] = await rpcBatch(anvil.url, [
				{ method: "eth_getBlockByNumber", params: [hex, true] },
				{ method: "eth_getBlockReceipts", params: [hex] },
				{ method: "trace_block", params: [hex] },
			]);
			out.push({ block, receipts, traces });
		}
		return out;
	} finally {
		await anvil.stop();
	}
}

// --- templates --------------------------------------------------------------------------------

/** Placeholders: hex and decimal number, hash, parent hash, hex and decimal timestamp. */
type Slot = "NH" | "ND" | "H" | "P" | "TH" | "TD";
const slot = (s: Slot) => `__${s}__`;

/**
 * Puts placeholders where a block's identity is written; `top` is the block object itself.
 * Transaction hashes (`txs`: the template's, in order) become `__X<i>__`, so each copy of a block
 * has its own: random 32-byte values are most of a row's bytes, and repeated ones would compress
 * away and understate bytes/row.
 */
function mark(value: unknown, top: boolean, txs: string[]): unknown {
	if (Array.isArray(value)) return value.map((v) => mark(v, false, txs));
	if (value === null || typeof value !== "object") return value;
	const o = { ...(value as Record<string, unknown>) };
	const num = (v: unknown) => slot(typeof v === "number" ? "ND" : "NH");
	const time = (v: unknown) => slot(typeof v === "number" ? "TD" : "TH");
	for (const [k, v] of Object.entries(o)) {
		if (k === "blockNumber") o[k] = num(v);
		else if (k === "blockHash") o[k] = slot("H");
		else if (k === "blockTimestamp") o[k] = time(v);
		else if (top && k === "number") o[k] = num(v);
		else if (top && k === "hash") o[k] = slot("H");
		else if (top && k === "parentHash") o[k] = slot("P");
		else if (top && k === "timestamp") o[k] = time(v);
		else if ((k === "transactionHash" || (k === "hash" && !top)) && txs.includes(v as string))
			o[k] = `__X${txs.indexOf(v as string)}__`;
		else if (typeof v === "object") o[k] = mark(v, false, txs);
	}
	return o;
}

/** JSON text split at its placeholders: even items are text, odd ones slots. */
function template(value: unknown): string[] {
	return JSON.stringify(value).split(/"__(NH|ND|H|P|TH|TD|X\d+)__"/);
}

const hashOf = (n: number) => `0x${"b10c".padEnd(48, "0")}${n.toString(16).padStart(16, "0")}`;
const TIME0 = 1_700_000_000;

function fill(parts: string[], n: number): string {
	let s = "";
	for (let i = 0; i < parts.length; i++) {
		const p = parts[i] as string;
		if (i % 2 === 0) {
			s += p;
			continue;
		}
		if (p.startsWith("X")) {
			s += `"0x${createHash("sha256").update(`${n}:${p}`).digest("hex")}"`;
			continue;
		}
		switch (p as Slot) {
			case "NH":
				s += `"0x${n.toString(16)}"`;
				break;
			case "ND":
				s += String(n);
				break;
			case "H":
				s += `"${hashOf(n)}"`;
				break;
			case "P":
				s += `"${hashOf(n - 1)}"`;
				break;
			case "TH":
				s += `"0x${(TIME0 + 12 * n).toString(16)}"`;
				break;
			case "TD":
				s += String(TIME0 + 12 * n);
				break;
		}
	}
	return s;
}

// --- serve ------------------------------------------------------------------------------------

interface Templates {
	block: string[];
	header: string[];
	receipts: string[];
	traces: string[];
}

async function serve(recorded: Recorded[]) {
	const templates: Templates[] = recorded.map((r) => {
		const block = r.block as Record<string, unknown>;
		const { transactions, ...header } = block;
		const txs = (transactions as { hash: string }[]).map((t) => t.hash);
		return {
			block: template(mark(block, true, txs)),
			header: template(mark({ ...header, transactions: [] }, true, txs)),
			receipts: template(mark(r.receipts, false, txs)),
			traces: template(mark(r.traces, false, txs)),
		};
	});
	let serverMs = 0;
	let answers = 0;
	const of = (param: unknown): number => Number(param as string);
	const answer = (method: string, params: unknown[]): string | { code: number; message: string } => {
		const n = params.length > 0 ? of(params[0]) : 0;
		const t = templates[(n - 1 + templates.length * 1e6) % templates.length] as Templates;
		const inRange = n >= 1 && n <= BLOCKS;
		switch (method) {
			case "eth_chainId":
				return '"0x7a69"';
			case "eth_blockNumber":
				return `"0x${BLOCKS.toString(16)}"`;
			case "eth_getBlockByNumber":
				if (params[0] === "latest") return fill(params[1] ? t.block : t.header, BLOCKS);
				if (!inRange) return "null";
				return fill(params[1] ? t.block : t.header, n);
			case "eth_getBlockReceipts":
				return inRange ? fill(t.receipts, n) : "null";
			case "trace_block":
				return inRange ? fill(t.traces, n) : "null";
			case "eth_accounts":
				return "[]";
			case "eth_getBalance":
				return '"0x0"';
			case "eth_call":
				return { code: 3, message: "execution reverted" };
			default:
				return { code: -32601, message: `method ${method} not found` };
		}
	};
	const server = createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", (c: Buffer) => chunks.push(c));
		req.on("end", () => {
			const t0 = performance.now();
			const body = JSON.parse(Buffer.concat(chunks).toString()) as unknown;
			const one = (r: { id: unknown; method: string; params?: unknown[] }) => {
				answers++;
				const a = answer(r.method, r.params ?? []);
				const id = JSON.stringify(r.id ?? null);
				return typeof a === "string"
					? `{"jsonrpc":"2.0","id":${id},"result":${a}}`
					: `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(a)}}`;
			};
			const text = Array.isArray(body) ? `[${body.map(one).join(",")}]` : one(body as Parameters<typeof one>[0]);
			res.writeHead(200, { "content-type": "application/json" });
			res.end(text);
			serverMs += performance.now() - t0;
		});
	});
	await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}`,
		stats: () => ({ serverMs, answers }),
		close: () => new Promise<void>((r) => server.close(() => r())),
	};
}

// --- run --------------------------------------------------------------------------------------

const t0 = performance.now();
const recorded = await record();
const recordSeconds = (performance.now() - t0) / 1000;
const txsRecorded = recorded.reduce(
	(a, r) => a + ((r.block as { transactions: unknown[] }).transactions.length ?? 0),
	0,
);
const server = await serve(recorded);
const dir = await mkdtemp(join(tmpdir(), "chainlake-pipeline-"));
try {
	const logger = createLogger({ quiet: true });
	const backfill = createBackfill({
		rpc: createRpcClient({ urls: [server.url], logger }),
		chain: parseChainId(CHAIN),
		dataDir: dir,
		logger,
	});
	const cpu0 = process.cpuUsage();
	// RSS and JS heap every 10 s, to see whether memory levels off or keeps growing with the run.
	const samples: string[] = [];
	const started = performance.now();
	const sampler = setInterval(() => {
		const m = process.memoryUsage();
		const mib = (b: number) => (b / 2 ** 20).toFixed(0);
		samples.push(`${((performance.now() - started) / 1000).toFixed(0)}s ${mib(m.rss)}/${mib(m.heapUsed)}`);
	}, 10_000);
	const s = await backfill
		.run({
			from: 1,
			to: BLOCKS,
			traces: "parity",
			partitionSize: Number(values["partition-size"]),
			concurrency: Number(values.concurrency),
		})
		.finally(() => clearInterval(sampler));
	const cpu = process.cpuUsage(cpu0);
	const { serverMs, answers } = server.stats();
	const totalRows = Object.values(s.rows).reduce((a, b) => a + b, 0);
	const chainDir = join(dir, CHAIN);
	const allBytes = folderBytes(chainDir);
	let datasetBytes = 0;
	const lines: string[] = [];
	for (const d of DATASETS) {
		const ddir = datasetDir(dir, CHAIN, d);
		let bytes = 0;
		for (const f of readdirSync(ddir)) if (f.endsWith(".parquet")) bytes += statSync(join(ddir, f)).size;
		datasetBytes += bytes;
		const rows = s.rows[d];
		lines.push(
			`| ${d} | ${rows} | ${(rows / s.blocks).toFixed(1)} | ${bytes} | ${rows ? (bytes / rows).toFixed(1) : "-"} |`,
		);
	}
	console.log(
		`recorded: ${recorded.length} anvil blocks, ${txsRecorded} txs (${TXS}/block asked), in ${recordSeconds.toFixed(1)} s (not timed below)`,
	);
	console.log(
		`served from memory: blocks 1..${BLOCKS}, ${answers} JSON-RPC answers, server time ${(serverMs / 1000).toFixed(2)} s (same process)`,
	);
	console.log(
		`backfill: ${s.chunks} chunks, ${s.seconds.toFixed(2)} s, ${(s.blocks / s.seconds).toFixed(1)} blocks/s, ${(totalRows / s.seconds).toFixed(0)} rows/s (${(s.blocks / (s.seconds - serverMs / 1000)) | 0} blocks/s without the server's time)`,
	);
	console.log(
		`process CPU during the backfill: ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s (${((cpu.user + cpu.system) / 1e4 / s.seconds).toFixed(0)}% of one core; DuckDB threads included); peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB (the server's recorded blocks included)`,
	);
	console.log(
		`disk: datasets ${datasetBytes} bytes (${(datasetBytes / totalRows).toFixed(1)} bytes/row), whole chain folder ${allBytes} bytes (${(allBytes / totalRows).toFixed(1)} bytes/row, ${(allBytes / s.blocks).toFixed(0)} bytes/block: datasets, index files and runs, Delta logs)`,
	);
	console.log(`memory every 10 s, RSS/JS heap in MiB: ${samples.join(", ")}`);
	console.log("| dataset | rows | rows/block | bytes | bytes/row |\n|---|---:|---:|---:|---:|");
	for (const l of lines) console.log(l);
} finally {
	await server.close();
	await rm(dir, { recursive: true, force: true });
}
