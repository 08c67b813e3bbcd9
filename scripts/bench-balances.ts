/**
 * `npm run bench:balances -- --data-dir <synth folder> [--n 30]`: the Balances API's questions on
 * a synthetic chain (npm run synth; `npm run reindex` adds the balance indexes to an older
 * folder), asked through the query layer the routes use: a wallet's ERC-20 and native balances
 * and NFT inventory at the head and at a past block (mid-history, so a merged run straddles it),
 * the first page of a token's holders and of the busiest NFT collection's owners at the head and
 * at that block, for the targets `npm run synth` picked. Prints p50/p99 ms per case; figures are
 * printed, never asserted.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { nativeBalance, tokenBalances } from "../src/query/balances.js";
import { TooManyChangesError } from "../src/query/deltas.js";
import { tokenHolders } from "../src/query/holders.js";
import { nftHoldings } from "../src/query/nfts.js";
import { createStore } from "../src/query/store.js";
import { type SynthTargets, targetsPath } from "../src/synth/targets.js";
import { fmt, timeCalls } from "./bench/measure.js";

const { values } = parseArgs({
	options: {
		"data-dir": { type: "string" },
		chain: { type: "string", default: "eip155-1" },
		n: { type: "string", default: "30" },
	},
});
const dataDir = values["data-dir"];
if (!dataDir) {
	process.stderr.write("usage: npm run bench:balances -- --data-dir <synth folder> [--n 30]\n");
	process.exit(2);
}
const chain = values.chain as string;
const n = Number(values.n);
const targets = JSON.parse(readFileSync(targetsPath(dataDir, chain), "utf8")) as SynthTargets;
const store = await createStore(dataDir);
const head = store.snapshot(chain).head() ?? 0;
const past = Math.floor(head / 2) + 123;
const say = (s: string) => process.stdout.write(`${s}\n`);
say(`| case | p50 / p99 ms | answer |`);
say(`|---|---:|---|`);
const row = async (name: string, fn: () => Promise<string>) => {
	let answer = "";
	const l = await timeCalls(async () => {
		try {
			answer = await fn();
		} catch (err) {
			if (!(err instanceof TooManyChangesError)) throw err;
			answer = err.message.split(" (")[0] ?? "";
		}
	}, n);
	say(`| ${name} | ${fmt(l.p50)} / ${fmt(l.p99)} | ${answer} |`);
};
for (const [kind, counted] of Object.entries(targets.addresses)) {
	const address = counted[0]?.value as string;
	for (const [label, at] of [
		["head", undefined],
		[`block ${past}`, past],
	] as const) {
		await row(`wallet's token balances, ${kind}, ${label}`, async () => {
			const b = await tokenBalances(store.snapshot(chain), address, at);
			return `${b.length} tokens`;
		});
		await row(`wallet's native balance, ${kind}, ${label}`, async () => {
			const b = await nativeBalance(store.snapshot(chain), address, at ?? head);
			return `last changed at ${b.seenAt}`;
		});
		await row(`wallet's NFTs, first 100, ${kind}, ${label}`, async () => {
			const p = await nftHoldings(store.snapshot(chain), { by: "address", value: address, n: at ?? head, limit: 100 });
			return `${p.items.length} NFTs, more: ${p.hasMore}`;
		});
	}
}
const [busiest] = await store
	.snapshot(chain)
	.query(
		"SELECT contract, count(*) AS n FROM {transfers} WHERE token_standard IN ('erc721', 'erc1155') GROUP BY contract ORDER BY n DESC LIMIT 1",
	);
if (busiest) {
	for (const [label, at] of [
		["head", head],
		[`block ${past}`, past],
	] as const) {
		await row(`owners, first 100, busiest NFT collection (${busiest.n} transfers), ${label}`, async () => {
			const p = await nftHoldings(store.snapshot(chain), {
				by: "token",
				value: String(busiest.contract),
				n: at,
				limit: 100,
			});
			return `${p.items.length} holdings, more: ${p.hasMore}`;
		});
	}
}
for (const [kind, counted] of Object.entries(targets.tokens)) {
	const token = counted[0]?.value as string;
	for (const [label, at] of [
		["head", undefined],
		[`block ${past}`, past],
	] as const) {
		await row(`holders, first 100, ${kind} token, ${label}`, async () => {
			const p = await tokenHolders(store.snapshot(chain), token, { limit: 100 }, at);
			return `${p.holders.length} holders, more: ${p.hasMore}`;
		});
	}
}
store.close();
