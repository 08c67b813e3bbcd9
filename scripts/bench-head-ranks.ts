/**
 * `npm run bench:head-ranks -- --data-dir <followed lake> [--at <block>]... [--rounds 13]`: what head
 * ranks (src/store/holdings/head-ranks.ts) cost to build and what they give a token's first holders
 * page at the head of a folder a follower keeps (holder ranks at its settled prefix, indexed chunks
 * after them). For each `--at` (a chunk's last block after the holder ranks; default: the indexed
 * chain's end), builds head ranks there, IN THE FOLDER (a follower would write the same; the next
 * build or follower replaces them), prints the build's wall time and size, then times the first
 * page of 100 holders at the head through the query layer for the tokens they hold the most
 * holdings of and those with the most changes after them: as the route reads it, with the head
 * ranks hidden (the holder ranks or summing, as before them), and summed from the index files alone,
 * alternating, p50 ms, after the first page of the store (printed: it reads every token's changes
 * after them, once per manifest state). Every way's page is compared with the summed one. Figures
 * are printed, never asserted.
 */
import { parseArgs } from "node:util";
import { tokenHolders } from "../src/query/holders.js";
import { createStore } from "../src/query/store/create-store.js";
import type { Snapshot } from "../src/query/store/store.js";
import { createParquetWriter } from "../src/store/files/parquet-writer.js";
import { loadManifest } from "../src/store/format/manifest.js";
import { headRanksOf } from "../src/store/format/records.js";
import { headRanksStep } from "../src/store/holdings/head-ranks.js";
import { usableRanks } from "../src/store/holdings/holder-ranks.js";
import { parseChainId } from "../src/util/chain.js";
import { flagUsage, startCli, usageError } from "../src/util/cli.js";
import { summarise } from "./bench/measure.js";

const options = {
	"data-dir": { type: "string" },
	chain: { type: "string", default: "eip155-1" },
	at: { type: "string", multiple: true },
	rounds: { type: "string", default: "13" },
	tokens: { type: "string", default: "3" },
} as const;
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage("npm run bench:head-ranks -- --data-dir <followed lake> [--at <block>]... [flags]", options),
	}),
	options,
});
const dataDir = values["data-dir"];
if (!dataDir) usageError("--data-dir is required: a folder a follower keeps, with holder ranks");
const chain = parseChainId(values.chain);
const rounds = Number(values.rounds);
const say = (s: string) => process.stdout.write(`${s}\n`);

const manifest = await loadManifest(dataDir, chain.id, chain.number);
if (!manifest || !usableRanks(dataDir, manifest))
	usageError(`${dataDir} has no usable holder ranks for ${chain.id} (a follower or npm run reindex writes them)`);
const head = Math.max(...manifest.chunks.map((c) => c.to));
say(`holder ranks through ${usableRanks(dataDir, manifest)?.to}, head ${head}`);

for (const at of values.at?.length ? values.at.map(Number) : [undefined]) {
	const m = await loadManifest(dataDir, chain.id, chain.number);
	if (!m) throw new Error("the manifest went away");
	// Built afresh at the block asked (the listed head ranks dropped first: the build would keep
	// usable ones); the previous files are left for the next writer's start to remove.
	m.ranks = m.ranks?.filter((r) => r.tokens === undefined);
	const writer = await createParquetWriter();
	const started = performance.now();
	try {
		await headRanksStep(writer, dataDir, m, undefined, { through: at, every: 1 });
	} finally {
		writer.close();
	}
	const built = headRanksOf(m);
	if (!built?.tokens) {
		say(`at ${at ?? "the indexed chain's end"}: no head ranks built (no indexed chunk after the holder ranks there)`);
		continue;
	}
	const tokens = Object.entries(built.tokens);
	say(
		`\nhead ranks at ${built.to} (${head - built.to} blocks below the head): ${tokens.length} tokens, ${built.rows} rows in ${built.rankParts} parts, built in ${((performance.now() - started) / 1000).toFixed(2)} s`,
	);
	const store = await createStore(dataDir);
	try {
		const snapshot = () => store.snapshot(chain.id);
		// The tokens with the most holdings there, then those with the most changes after them.
		const changed = new Map(
			(
				await snapshot().query(
					"SELECT token, count(DISTINCT address) AS n FROM {erc20_holders} WHERE first_block > $since GROUP BY token",
					{ since: built.to },
					[built.to + 1, head],
				)
			).map((r) => [String(r.token), Number(r.n)]),
		);
		const k = Number(values.tokens);
		const byHoldings = tokens.sort((a, b) => b[1] - a[1]).slice(0, k);
		const byChanges = tokens
			.filter(([t]) => !byHoldings.some(([h]) => h === t))
			.sort((a, b) => (changed.get(b[0]) ?? 0) - (changed.get(a[0]) ?? 0))
			.slice(0, k);
		const ways: Record<string, () => Snapshot> = {
			route: snapshot,
			"head ranks hidden": () => ({ ...snapshot(), headRanks: () => null }),
			summed: () => ({ ...snapshot(), headRanks: () => null, ranks: () => null }),
		};
		// The first page of a new manifest state reads every token's changes after them (once).
		const firstStarted = performance.now();
		await tokenHolders(snapshot(), (byHoldings[0] as [string, number])[0], { limit: 100 });
		say(
			`first page in a new store (every token's changes after them read once, footers, plans): ${(performance.now() - firstStarted).toFixed(2)} ms`,
		);
		say("| token | holdings | changed after | route | head ranks hidden | summed |");
		say("|---|---:|---:|---:|---:|---:|");
		for (const [token, holdings] of [...byHoldings, ...byChanges]) {
			const times: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((w) => [w, []]));
			let want = "";
			for (let round = 0; round <= rounds; round++) {
				// Each round starts with another way: none always pays for the first read.
				const order = Object.entries(ways);
				for (let i = 0; i < round % order.length; i++) order.push(order.shift() as [string, () => Snapshot]);
				for (const [way, db] of order) {
					const t = performance.now();
					const page = await tokenHolders(db(), token, { limit: 100 });
					const ms = performance.now() - t;
					const got = JSON.stringify(page, (_, v) => (typeof v === "bigint" ? String(v) : v));
					if (way === "summed") want ||= got;
					else if (want && got !== want) throw new Error(`${way}: another page than summing for ${token}`);
					if (round > 0) times[way]?.push(ms);
				}
			}
			const p50 = (way: string) => summarise(times[way] ?? []).p50.toFixed(2);
			say(
				`| ${token} | ${holdings} | ${changed.get(token) ?? 0} | ${p50("route")} | ${p50("head ranks hidden")} | ${p50("summed")} |`,
			);
		}
	} finally {
		store.close();
	}
}
