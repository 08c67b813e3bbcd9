/**
 * `npm run bench:balances -- --data-dir <synth folder> [--n 30]`: the Balances API's questions on
 * a synthetic chain (npm run synth; `npm run reindex` adds the balance indexes to an older
 * folder), asked through the query layer the routes use: a wallet's ERC-20 and native balances
 * (all of them, and the route's first page of 100) and NFT inventory at the head and at a past block (mid-history, so a merged run straddles it),
 * the first page of a token's holders and of the busiest NFT collection's owners at the head and
 * at that block, for the targets `npm run synth` picked. Prints p50/p99 ms per case; figures are
 * printed, never asserted. Holders pages are timed with the holder ranks (and head ranks, in a
 * followed folder) and with them hidden.
 * `--only holders` times those alone.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { nativeBalance, tokenBalances, tokenBalancesPage } from "../src/query/balances.js";
import { TooManyChangesError } from "../src/query/deltas.js";
import { tokenHolders } from "../src/query/holders.js";
import { nftHoldings } from "../src/query/nfts.js";
import { createStore } from "../src/query/store/create-store.js";
import type { Snapshot } from "../src/query/store/store.js";
import { type SynthTargets, targetsPath } from "../src/synth/targets.js";
import { flagUsage, startCli, usageError } from "../src/util/cli.js";
import { fmt, timeCalls } from "./bench/measure.js";

const options = {
	"data-dir": { type: "string" },
	chain: { type: "string", default: "eip155-1" },
	n: { type: "string", default: "30" },
	only: { type: "string" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage("npm run bench:balances -- --data-dir <synth folder> [--n 30] [--only <case>]", options),
	}),
	options,
});
const dataDir = values["data-dir"];
if (!dataDir) {
	usageError("--data-dir is required: a synthetic chain (npm run synth)");
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
// `--only holders`: only the holders pages (the wallet and NFT cases take most of a run).
for (const [kind, counted] of values.only === "holders" ? [] : Object.entries(targets.addresses)) {
	const address = counted[0]?.value as string;
	for (const [label, at] of [
		["head", undefined],
		[`block ${past}`, past],
	] as const) {
		await row(`wallet's token balances, ${kind}, ${label}`, async () => {
			const b = await tokenBalances(store.snapshot(chain), address, at);
			return `${b.length} tokens`;
		});
		// What the route answers by default: the first 100 tokens, by token address.
		await row(`wallet's token balances, first 100, ${kind}, ${label}`, async () => {
			const p = await tokenBalancesPage(store.snapshot(chain), address, at, { limit: 100 });
			return `${p.balances.length} tokens, more: ${p.next !== undefined}`;
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
if (busiest && values.only !== "holders") {
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
// Holders pages with the holder ranks (store/holdings/holder-ranks.ts) and, side by side, with them
// hidden (every holding summed from the index files): at the head, at a block just after the
// ranks' block (read through them), at the mid-history block (before it: summed), and page 5.
const ranks = store.snapshot(chain).ranks();
say(`\nholder ranks: ${ranks ? `blocks ${ranks.from}..${ranks.to}, ${ranks.rows} holdings` : "none"}`);
const recent = store.snapshot(chain).headRanks();
if (recent)
	say(`head ranks: at block ${recent.to}, ${Object.keys(recent.tokens).length} tokens, ${recent.rows} holdings`);
const snapshot = (ranked: boolean): Snapshot => {
	const db = store.snapshot(chain);
	return ranked ? db : { ...db, ranks: () => null, headRanks: () => null };
};
for (const [kind, counted] of Object.entries(targets.tokens)) {
	const token = counted[0]?.value as string;
	const cases: [string, number | undefined][] = [
		["head", undefined],
		...(ranks && ranks.to < head ? [[`block ${ranks.to + 1}`, ranks.to + 1] as [string, number]] : []),
		[`block ${past}`, past],
	];
	for (const [label, at] of cases)
		for (const ranked of [true, false])
			await row(`holders, first 100, ${kind} token, ${label}${ranked ? "" : ", ranks hidden"}`, async () => {
				const p = await tokenHolders(snapshot(ranked), token, { limit: 100 }, at);
				return `${p.holders.length} holders, more: ${p.hasMore}`;
			});
	for (const ranked of [true, false])
		await row(`holders, page 5 of 100, ${kind} token, head${ranked ? "" : ", ranks hidden"}`, async () => {
			let page = await tokenHolders(snapshot(ranked), token, { limit: 100 });
			for (let i = 1; i < 5 && page.next; i++)
				page = await tokenHolders(snapshot(ranked), token, { limit: 100, after: page.next });
			return `${page.holders.length} holders, more: ${page.hasMore}`;
		});
}
store.close();
