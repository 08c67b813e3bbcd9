/**
 * `npm run bench:streams [-- --blocks 30 --streams 1000]`: live streams (docs/api-contract.md
 * "Streams") against the service as users run it (`scripts/serve.ts --follow`, its own process)
 * over a live anvil chain. For each follower poll (the default 1000 ms, then 250 ms):
 * 1. latency: one stream of a wallet's native transfers; a block every `--interval-ms` moves ETH
 *    to the wallet; each block is timed from the moment the node had it (eth_sendTransaction
 *    returned, automine) until (a) the manifest lists it (the follower's head lag: this process
 *    stats the manifest every 2 ms) and (b) the stream delivers its item. Prints p50/p99 of both
 *    and of (b) - (a), what streams add to the head lag.
 * 2. idle streams: `--streams` streams of wallets that never move, opened at once; the service's
 *    RSS before and after (VmRSS, after a settle).
 * 3. the cost of a block with them open: the service's CPU time (utime + stime) a block, with
 *    and without the idle streams, and the active stream's latency meanwhile.
 * Never asserts; prints the figures.
 */
import { readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { manifestPath } from "../src/store/format/layout.js";
import { flagUsage, startCli } from "../src/util/cli.js";
import { startAnvil } from "../src/workload/anvil.js";
import { fmt, summarise } from "./bench/measure.js";
import { startService } from "./bench/server.js";

const options = {
	blocks: { type: "string", default: "30" },
	streams: { type: "string", default: "1000" },
	"interval-ms": { type: "string", default: "1200" },
	port: { type: "string", default: "18231" },
} as const;
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage("npm run bench:streams -- [--blocks 30] [--streams 1000] [--interval-ms 1200]", options),
	}),
	options,
});
const BLOCKS = Number(values.blocks);
const STREAMS = Number(values.streams);
const INTERVAL = Number(values["interval-ms"]);
const CHAIN = "eip155-31337";
/** Keys for the idle streams: each key may hold PER_KEY of them. */
const PER_KEY = 50;
const KEYS = Array.from({ length: Math.ceil(STREAMS / PER_KEY) + 1 }, (_, i) => `bench-stream-key-${i}`);
const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Service {
	base: string;
	stop(): Promise<void>;
	rss(): number;
	cpuMs(): number;
}

/** The service (scripts/bench/server.ts) following the anvil chain, once it has stored a block. */
async function startServe(dataDir: string, port: number, rpc: string, pollMs: number): Promise<Service> {
	const svc = await startService(dataDir, port, KEYS[0] as string, {
		keys: KEYS.slice(1),
		args: [
			...["--follow", `${CHAIN}=${rpc}`, "--poll-ms", String(pollMs)],
			...["--max-streams", String(STREAMS + 10), "--max-streams-per-key", String(PER_KEY)],
		],
	});
	for (let i = 0; ; i++) {
		const r = await fetch(`${svc.base}/${CHAIN}/v1/blocks/latest`, { headers: { authorization: `Bearer ${KEYS[0]}` } });
		if (r.ok) break;
		if (i > 600) throw new Error(`the follower stored no block in 60 s (HTTP ${r.status})`);
		await sleep(100);
	}
	const { pid } = svc;
	return {
		base: svc.base,
		stop: () => svc.stop(),
		rss: () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024,
		cpuMs: () => {
			// Fields 14 and 15 of /proc/<pid>/stat (after the command's parenthesis): utime, stime in ticks.
			const rest = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
			return ((Number(rest[11]) + Number(rest[12])) * 1000) / 100;
		},
	};
}

/** An SSE stream over a socket: `onEvent` for each whole event; `opened` when the 200 arrived. */
function openStream(url: string, key: string, onEvent: (event: string, data: string) => void) {
	let req: http.ClientRequest | undefined;
	const opened = new Promise<void>((resolve, reject) => {
		req = http.get(url, { agent, headers: { accept: "text/event-stream", authorization: `Bearer ${key}` } }, (res) => {
			if (res.statusCode !== 200) {
				reject(new Error(`stream ${url}: HTTP ${res.statusCode}`));
				res.resume();
				return;
			}
			resolve();
			let buf = "";
			res.setEncoding("utf8");
			res.on("data", (chunk: string) => {
				buf += chunk;
				for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
					const block = buf.slice(0, i);
					buf = buf.slice(i + 2);
					const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
					onEvent(event, /^data: (.*)$/m.exec(block)?.[1] ?? "");
				}
			});
		});
		req.on("error", (err) => reject(err));
	});
	return { opened, close: () => req?.destroy() };
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
	});
	return ((await res.json()) as { result: unknown }).result;
}

/** The newest block the manifest lists (its chunks' last block), or -1. */
function storedHead(dataDir: string): number {
	try {
		const m = JSON.parse(readFileSync(manifestPath(dataDir, CHAIN), "utf8")) as { chunks: { to: number }[] };
		return Math.max(-1, ...m.chunks.map((c) => c.to));
	} catch {
		return -1; // being replaced this instant: the next look reads it
	}
}

async function run(pollMs: number) {
	const anvil = await startAnvil({ chainId: 31337 });
	const dir = await mkdtemp(join(tmpdir(), "chainlake-bench-streams-"));
	const svc = await startServe(dir, Number(values.port), anvil.url, pollMs);
	const [from, to] = (await rpc(anvil.url, "eth_accounts", [])) as [string, string];
	const wallet = to.toLowerCase();
	const arrived = new Map<number, number>();
	const active = openStream(
		`${svc.base}/${CHAIN}/v1/address/${wallet}/transfers?asset_type=native`,
		KEYS[0] as string,
		(event, data) => {
			if (event !== "item") return;
			const n = (JSON.parse(data) as { block_number: number }).block_number;
			if (!arrived.has(n)) arrived.set(n, performance.now());
		},
	);
	await active.opened;

	// The manifest watched from here: when the follower has stored each block.
	const stored = new Map<number, number>();
	let watching = true;
	let lastMtime = 0;
	const watch = (async () => {
		while (watching) {
			try {
				const m = statSync(manifestPath(dir, CHAIN)).mtimeMs;
				if (m !== lastMtime) {
					lastMtime = m;
					const head = storedHead(dir);
					const t = performance.now();
					for (const n of [head]) if (n >= 0 && !stored.has(n)) stored.set(n, t);
				}
			} catch {}
			await sleep(2);
		}
	})();

	/** Mines `count` blocks, each moving 1 wei to the wallet; per block: [ms to stored, ms to item]. */
	async function blocks(count: number): Promise<{ stored: number[]; item: number[]; added: number[] }> {
		const out = { stored: [] as number[], item: [] as number[], added: [] as number[] };
		for (let i = 0; i < count; i++) {
			await rpc(anvil.url, "eth_sendTransaction", [{ from, to, value: "0x1" }]);
			const mined = performance.now();
			const n = Number(await rpc(anvil.url, "eth_blockNumber", []));
			for (let w = 0; !arrived.has(n) && w < 30_000; w += 1) await sleep(1);
			const s = stored.get(n);
			const a = arrived.get(n);
			if (s !== undefined && a !== undefined) {
				out.stored.push(s - mined);
				out.item.push(a - mined);
				out.added.push(a - s);
			}
			await sleep(Math.max(0, INTERVAL - (performance.now() - mined)));
		}
		return out;
	}
	const line = (name: string, ms: number[]) => {
		const s = summarise(ms);
		return `${name} p50 ${fmt(s.p50)} / p99 ${fmt(s.p99)} ms`;
	};
	const say = (what: string, r: { stored: number[]; item: number[]; added: number[] }) =>
		console.log(
			`poll ${pollMs} ms, ${what} (${r.item.length} blocks): ${line("stored (head lag)", r.stored)}; ${line("item", r.item)}; ${line("item - stored", r.added)}`,
		);

	const quiet = await blocks(BLOCKS);
	say("one stream", quiet);
	const cpuQuiet = svc.cpuMs();
	const alone = await blocks(Math.min(10, BLOCKS));
	const cpuAlone = (svc.cpuMs() - cpuQuiet) / Math.max(1, alone.item.length);

	// Idle streams: wallets that never move.
	const rssBefore = svc.rss();
	const idle: ReturnType<typeof openStream>[] = [];
	const opening = performance.now();
	for (let i = 0; i < STREAMS; i++) {
		const address = `0x${(0xb000000 + i).toString(16).padStart(40, "0")}`;
		idle.push(
			openStream(
				`${svc.base}/${CHAIN}/v1/address/${address}/transfers?asset_type=native`,
				KEYS[1 + Math.floor(i / PER_KEY)] as string,
				() => {},
			),
		);
	}
	await Promise.all(idle.map((s) => s.opened));
	const openMs = performance.now() - opening;
	await sleep(3000);
	const rssAfter = svc.rss();
	console.log(
		`poll ${pollMs} ms: ${STREAMS} idle streams opened in ${(openMs / 1000).toFixed(1)} s; service RSS ${(rssBefore / 2 ** 20).toFixed(0)} -> ${(rssAfter / 2 ** 20).toFixed(0)} MiB (+${((rssAfter - rssBefore) / 2 ** 20).toFixed(0)} MiB, ${((rssAfter - rssBefore) / STREAMS / 1024).toFixed(1)} KiB a stream)`,
	);
	const cpuBusy0 = svc.cpuMs();
	const busy = await blocks(Math.min(10, BLOCKS));
	const cpuBusy = (svc.cpuMs() - cpuBusy0) / Math.max(1, busy.item.length);
	say(`with ${STREAMS} idle streams open`, busy);
	console.log(
		`poll ${pollMs} ms: service CPU a block ${cpuAlone.toFixed(0)} ms with one stream, ${cpuBusy.toFixed(0)} ms with ${STREAMS} more open (${(((cpuBusy - cpuAlone) / STREAMS) * 1000).toFixed(0)} us a stream a block)`,
	);
	for (const s of idle) s.close();
	active.close();
	watching = false;
	await watch;
	await svc.stop();
	await anvil.stop();
	await rm(dir, { recursive: true, force: true });
}

for (const poll of [1000, 250]) await run(poll);
agent.destroy();
