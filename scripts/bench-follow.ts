/**
 * Head lag: `npm run bench:follow [-- --blocks 60 --poll-ms 250]`. Serves a follower-fed API over
 * a live anvil chain, mines a block of transactions every 500 ms, and times each block from
 * the moment the node had it (eth_sendTransaction returned with automine) until
 * /blocks/latest over HTTP answers it. Prints p50/p99/max.
 *
 * With `--tokens` the workload (tokens, NFTs, traces) runs first and every block also moves an
 * ERC-20 amount, and `--partition-size`/`--finality-depth` make chunks settle within the run, so
 * the balance upkeep (balance delta files, runs, token metadata, holder ranks) runs in the
 * follower's background while the lag is measured; the upkeep done is printed.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { encodeFunctionData, parseAbi } from "viem";
import { buildApp } from "../src/api/app.js";
import { createKeyring } from "../src/api/keys.js";
import { startFollowers } from "../src/follow/followers.js";
import { createStore } from "../src/query/store/create-store.js";
import { manifestPath } from "../src/store/format/layout.js";
import { headRanksOf, type Manifest, settledRanksOf } from "../src/store/format/records.js";
import { unsettledChunks } from "../src/store/indexes/runs.js";
import { flagUsage, startCli } from "../src/util/cli.js";
import { createLogger } from "../src/util/logger.js";
import { startAnvil } from "../src/workload/anvil.js";
import { runWorkload } from "../src/workload/run.js";

const ERC20 = parseAbi(["function transfer(address, uint256) returns (bool)"]);

const options = {
	blocks: { type: "string", default: "60" },
	"poll-ms": { type: "string", default: "250" },
	tokens: { type: "boolean", default: false },
	"partition-size": { type: "string" },
	"finality-depth": { type: "string" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({ usage: flagUsage("npm run bench:follow -- [--blocks 60] [--poll-ms 250] [--tokens]", options) }),
	options,
});
const anvil = await startAnvil({ chainId: 31337 });
const workload = values.tokens ? await runWorkload({ rpcUrl: anvil.url }) : null;
const dir = await mkdtemp(join(tmpdir(), "chainlake-bench-follow-"));
const call = async (method: string, params: unknown[]) =>
	(
		(await (
			await fetch(anvil.url, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
			})
		).json()) as { result: unknown }
	).result;
const follow = startFollowers([{ chain: "eip155-31337", urls: [anvil.url] }], {
	dataDir: dir,
	logger: createLogger({ quiet: true }),
	pollMs: Number(values["poll-ms"]),
	...(values["partition-size"] ? { partitionSize: Number(values["partition-size"]) } : {}),
	...(values["finality-depth"] ? { finalityDepth: Number(values["finality-depth"]) } : {}),
});
try {
	while (follow.sources.get("eip155-31337")?.stats.lastStepAt == null) await new Promise((r) => setTimeout(r, 20));
	const store = await createStore(dir);
	const app = await buildApp({
		store,
		keyring: createKeyring({ path: join(dir, "k.json"), envKeys: ["k"] }),
		dataDir: dir,
	});
	const base = await app.listen({ port: 0, host: "127.0.0.1" });
	const [from, to] = (await call("eth_accounts", [])) as string[];
	const lags: number[] = [];
	for (let i = 0; i < Number(values.blocks); i++) {
		if (workload) {
			// Into the same block as the ETH transfer below (anvil mines each on arrival otherwise).
			await call("evm_setAutomine", [false]);
			await call("eth_sendTransaction", [
				{
					from: workload.accounts.deployer,
					to: workload.contracts.token20,
					data: encodeFunctionData({
						abi: ERC20,
						functionName: "transfer",
						args: [to as `0x${string}`, BigInt(i + 1)],
					}),
				},
			]);
			await call("eth_sendTransaction", [{ from, to, value: "0x1" }]);
			await call("evm_mine", []);
			await call("evm_setAutomine", [true]);
		} else await call("eth_sendTransaction", [{ from, to, value: "0x1" }]);
		const mined = performance.now();
		const n = Number(await call("eth_blockNumber", []));
		for (;;) {
			const r = await fetch(`${base}/eip155-31337/v1/blocks/latest`, { headers: { authorization: "Bearer k" } });
			if (((await r.json()) as { number?: number }).number === n) break;
			await new Promise((r) => setTimeout(r, 5));
		}
		lags.push(performance.now() - mined);
		await new Promise((r) => setTimeout(r, 500 - Math.min(500, performance.now() - mined)));
	}
	lags.sort((a, b) => a - b);
	const q = (p: number) => (lags[Math.min(lags.length - 1, Math.floor(p * lags.length))] ?? 0).toFixed(0);
	console.log(
		`head lag over ${lags.length} blocks (poll every ${values["poll-ms"]} ms): p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms`,
	);
	if (workload) {
		const m = JSON.parse(readFileSync(manifestPath(dir, "eip155-31337"), "utf8")) as Manifest;
		// Whether the background kept up with the head: its chunks not settled that list their
		// balance deltas (merges.ts headStep) at the moment the run ended.
		const open = unsettledChunks(m);
		const derived = open.filter((c) => c.indexes?.includes("erc20_balances")).length;
		console.log(
			`upkeep during the run: ${m.runs?.length ?? 0} runs listed, holder ranks through block ${settledRanksOf(m)?.to ?? "none"} (generation ${settledRanksOf(m)?.gen ?? "-"}), head ranks ${headRanksOf(m) ? `at block ${headRanksOf(m)?.to} (generation ${headRanksOf(m)?.gen}, ${Object.keys(headRanksOf(m)?.tokens ?? {}).length} tokens)` : "none"}, token metadata sets ${m.metadata?.length ?? 0}, stored head ${Math.max(...m.chunks.map((c) => c.to))}, chunks not settled with their balance deltas ${derived} of ${open.length}`,
		);
	}
	await app.close();
	store.close();
} finally {
	await follow.stop();
	await anvil.stop();
	await rm(dir, { recursive: true, force: true });
}
