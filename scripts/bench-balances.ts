/**
 * `npm run bench:balances -- --data-dir <synth folder> [--n 30]`: the Balances API's questions on
 * a synthetic chain (npm run synth; `npm run reindex` adds the balance indexes to an older
 * folder), asked through the query layer the routes use: a wallet's ERC-20 balances at the head
 * and at a past block (mid-history, so a merged run straddles it), and the first page of a
 * token's holders at the head and at that block, for the targets `npm run synth` picked. Prints
 * p50/p99 ms per case; figures are printed, never asserted.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { tokenBalances } from "../src/query/balances.js";
import { tokenHolders } from "../src/query/holders.js";
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
		answer = await fn();
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
			return "tooMany" in p ? `${p.tooMany} straddling: refused` : `${p.holders.length} holders, more: ${p.hasMore}`;
		});
	}
}
store.close();
