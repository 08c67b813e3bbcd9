/**
 * `npm run reindex -- --data-dir data [--chain eip155-1] [--compact-rows N] [--delta on|off]
 * [--delta-retention-minutes 360] [--delta-final-only false|true]`: rewrites files
 * written with unsigned integer types with signed ones (src/store/upgrade-types.ts), writes the index
 * files (by address and by hash, src/store/indexes.ts) for chunks that lack them, e.g. data
 * backfilled before they existed, rebuilds damaged merged runs, merges settled chunks' index
 * files into runs (src/store/runs.ts) and their dataset files into larger chunks
 * (src/store/chunk-merges.ts).
 * Its saves bring the Delta Lake logs up to date too (src/store/delta/).
 * Resumable; stop the chain's backfill or follower first.
 */
import { parseArgs } from "node:util";
import { chainsIn } from "../src/query/views.js";
import { LAKE_FLAG_OPTIONS, lakeFlags } from "../src/store/delta/lake-flags.js";
import { reindexChain } from "../src/store/reindex.js";
import { parseChainId } from "../src/util/chain.js";
import { ChainlakeError } from "../src/util/errors.js";

const { values } = parseArgs({
	options: {
		"data-dir": { type: "string", default: "data" },
		chain: { type: "string", multiple: true },
		"compact-rows": { type: "string" },
		...LAKE_FLAG_OPTIONS,
	},
});
const compactRows = values["compact-rows"] === undefined ? undefined : Number(values["compact-rows"]);
if (compactRows !== undefined && (!Number.isSafeInteger(compactRows) || compactRows < 1)) {
	process.stderr.write(`error: --compact-rows must be a positive integer, not ${values["compact-rows"]}\n`);
	process.exit(2);
}
let lake: ReturnType<typeof lakeFlags>;
try {
	lake = lakeFlags(values);
} catch (err) {
	process.stderr.write(`error: ${(err as Error).message}\n`);
	process.exit(2);
}
const dataDir = values["data-dir"] as string;
const chains = values.chain ?? chainsIn(dataDir);
try {
	for (const id of chains) {
		const started = performance.now();
		const n = await reindexChain(
			dataDir,
			parseChainId(id),
			(from, to) => process.stderr.write(`${id}: indexed blocks ${from}..${to}\n`),
			compactRows,
			(what) => process.stderr.write(`${id}: signed column types for ${what}\n`),
			lake,
		);
		process.stdout.write(`${id}: ${n} chunks indexed in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
	}
} catch (err) {
	// A damaged manifest, a held lock, a bad chain id: the message says what to do; no stack.
	if (!(err instanceof ChainlakeError)) throw err;
	process.stderr.write(`error [${err.code}]: ${err.message}\n`);
	process.exit(1);
}
