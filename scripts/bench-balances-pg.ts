/**
 * `npm run bench:balances-pg -- --data-dir <synth folder> [--n 20] [--port 55432]`: the Balances
 * API's ERC-20 questions answered by PostgreSQL as an explorer keeps them, side by side with
 * `npm run bench:balances` on the same folder: the chain's transfers loaded from our Parquet files
 * (with the B-tree indexes of scripts/bench/postgres.ts), a balances table summed from them
 * (holder, token, balance NUMERIC) with a B-tree index per question, and the same wallets and
 * tokens `npm run synth` picked. A past block has no table of its own in such a schema: it is
 * summed from the wallet's transfers through the sender and recipient indexes. Prints p50/p99 ms.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { readManifestSafe } from "../src/store/format/manifest.js";
import { type SynthTargets, targetsPath } from "../src/synth/targets.js";
import { flagUsage, startCli, usageError } from "../src/util/cli.js";
import { fmt, timeCalls } from "./bench/measure.js";
import { startPostgres } from "./bench/postgres.js";

const options = {
	"data-dir": { type: "string" },
	chain: { type: "string", default: "eip155-1" },
	n: { type: "string", default: "20" },
	port: { type: "string", default: "55432" },
} as const;
// --help prints the usage; an unknown flag exits 2 with it (src/util/cli.ts).
const { values } = parseArgs({
	args: startCli({
		usage: flagUsage("npm run bench:balances-pg -- --data-dir <synth folder> [--n 20] [--port 55432]", options),
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
const head = Math.max(...(readManifestSafe(dataDir, chain)?.chunks ?? []).map((c) => c.to));
const past = Math.floor(head / 2) + 123;
const say = (s: string) => process.stdout.write(`${s}\n`);

const pg = await startPostgres(Number(values.port));
try {
	const loaded = await pg.load(dataDir, chain, ["transfers"]);
	say(
		`postgres: transfers loaded with indexes in ${loaded.seconds.toFixed(1)} s, ${(loaded.bytes / 2 ** 20).toFixed(0)} MiB`,
	);
	const t = performance.now();
	await pg.client.query(`CREATE TABLE erc20_balances AS
		SELECT holder, token, sum(amount) AS balance, max(block_number) AS seen FROM (
			SELECT recipient AS holder, contract AS token, value::NUMERIC AS amount, block_number FROM transfers WHERE token_standard = 'erc20' AND value IS NOT NULL
			UNION ALL SELECT sender, contract, -value::NUMERIC, block_number FROM transfers WHERE token_standard = 'erc20' AND value IS NOT NULL) x
		GROUP BY holder, token`);
	await pg.client.query("CREATE INDEX ON erc20_balances (holder, token)");
	await pg.client.query("CREATE INDEX ON erc20_balances (token, balance DESC, holder)");
	await pg.client.query("VACUUM ANALYZE erc20_balances");
	const size = await pg.client.query("SELECT pg_total_relation_size('erc20_balances')::BIGINT AS b");
	say(
		`postgres: erc20_balances built in ${((performance.now() - t) / 1000).toFixed(1)} s, ${(Number(size.rows[0].b) / 2 ** 20).toFixed(0)} MiB with its indexes`,
	);
	say("| case | p50 / p99 ms | answer |");
	say("|---|---:|---|");
	const row = async (name: string, fn: () => Promise<string>) => {
		let answer = "";
		const l = await timeCalls(async () => {
			answer = await fn();
		}, n);
		say(`| ${name} | ${fmt(l.p50)} / ${fmt(l.p99)} | ${answer} |`);
	};
	for (const [kind, counted] of Object.entries(targets.addresses)) {
		const a = counted[0]?.value as string;
		await row(`wallet's token balances, ${kind}, head`, async () => {
			const r = await pg.client.query(
				"SELECT token, balance::TEXT, seen FROM erc20_balances WHERE holder = $1 AND balance <> 0 ORDER BY token",
				[a],
			);
			return `${r.rowCount} tokens`;
		});
		await row(`wallet's token balances, ${kind}, block ${past}`, async () => {
			const r = await pg.client.query(
				`SELECT contract, sum(CASE WHEN recipient = $1 THEN value::NUMERIC ELSE 0 END) - sum(CASE WHEN sender = $1 THEN value::NUMERIC ELSE 0 END) AS balance
				 FROM transfers WHERE (sender = $1 OR recipient = $1) AND token_standard = 'erc20' AND value IS NOT NULL AND block_number <= $2
				 GROUP BY contract HAVING sum(CASE WHEN recipient = $1 THEN value::NUMERIC ELSE 0 END) - sum(CASE WHEN sender = $1 THEN value::NUMERIC ELSE 0 END) <> 0 ORDER BY contract`,
				[a, past],
			);
			return `${r.rowCount} tokens`;
		});
	}
	for (const [kind, counted] of Object.entries(targets.tokens)) {
		const token = counted[0]?.value as string;
		await row(`holders, first 100, ${kind} token, head`, async () => {
			const r = await pg.client.query(
				"SELECT holder, balance::TEXT FROM erc20_balances WHERE token = $1 AND balance > 0 AND holder <> '0x0000000000000000000000000000000000000000' ORDER BY balance DESC, holder LIMIT 100",
				[token],
			);
			return `${r.rowCount} holders`;
		});
	}
} finally {
	pg.stop();
}
