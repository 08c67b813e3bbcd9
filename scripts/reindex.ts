/**
 * `npm run reindex -- --data-dir data [--chain eip155-1] [--compact-rows N] [--whole-history]
 * [--delta on|off] [--delta-retention-minutes 360] [--delta-final-only false|true]`: rewrites files
 * written with unsigned integer types with signed ones (src/store/repair/upgrade-types.ts), writes the index
 * files (by address and by hash, src/store/format/indexes.ts) for chunks that lack them, e.g. data
 * backfilled before they existed, rebuilds damaged merged runs, merges settled chunks' index
 * files into runs (src/store/indexes/runs.ts) and their dataset files into larger chunks
 * (src/store/chunks/chunk-merges.ts); with --whole-history, then each lookup index's settled
 * history (not the balance deltas) into one run (runs.ts planWholeMerge: after a backfill, a quiet wallet reads one file of it).
 * Its saves bring the Delta Lake logs up to date too (src/store/delta/).
 * Resumable; stop the chain's backfill or follower first. Failures (a damaged manifest, a held
 * lock, a bad chain id) go through src/util/cli.ts: the message says what to do; no stack.
 */
import { parseArgs } from "node:util";
import { LAKE_FLAG_OPTIONS, LAKE_USAGE, lakeFlags } from "../src/store/delta/lake-flags.js";
import { reindexChain } from "../src/store/repair/reindex.js";
import { chainsIn, parseChainId } from "../src/util/chain.js";
import { startCli, usageError, userInput } from "../src/util/cli.js";

const USAGE = `usage: npm run reindex -- [--data-dir data] [--chain eip155-<n> ...] [--compact-rows N] [--whole-history] [delta flags]
  --data-dir <dir>       the lake's folder (CHAINLAKE_DATA_DIR; default data)
  --chain <chain>        a chain to reindex (repeatable; default every chain in the folder)
  --compact-rows <n>     rows a merged chunk may reach (default the chain's setting)
  --whole-history        then merge each lookup index's settled history into one run: a quiet
                         wallet's page reads one file of it (rewrites those files once; after a backfill)
  ${LAKE_USAGE}
                         the Delta Lake export (README "Reading the lake from other engines")`;

const argv = startCli({ usage: USAGE, dataDir: () => values["data-dir"] });
const { values } = parseArgs({
	args: argv,
	options: {
		"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR || "data" },
		chain: { type: "string", multiple: true },
		"compact-rows": { type: "string" },
		"whole-history": { type: "boolean", default: false },
		...LAKE_FLAG_OPTIONS,
	},
});
const compactRows = values["compact-rows"] === undefined ? undefined : Number(values["compact-rows"]);
if (compactRows !== undefined && (!Number.isSafeInteger(compactRows) || compactRows < 1))
	usageError(`--compact-rows must be a positive integer, not ${values["compact-rows"]}`);
const lake = userInput(() => lakeFlags(values));
const dataDir = values["data-dir"] as string;
const chains = values.chain ?? chainsIn(dataDir);
if (chains.length === 0) usageError(`${dataDir} holds no chain folder (eip155-<n>): check --data-dir`);
for (const id of chains) {
	const started = performance.now();
	const n = await reindexChain(
		dataDir,
		parseChainId(id),
		(from, to) => process.stderr.write(`${id}: indexed blocks ${from}..${to}\n`),
		compactRows,
		(what) =>
			process.stderr.write(`${id}: rewrote ${what} in this version's format (signed column types, index row groups)\n`),
		lake,
		values["whole-history"],
	);
	process.stdout.write(`${id}: ${n} chunks indexed in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}
