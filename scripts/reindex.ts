/**
 * `npm run reindex -- --data-dir data [--chain eip155-1]`: writes the index files (per-address
 * copies of transfers and transactions, src/store/indexes.ts) for chunks that lack them, e.g.
 * data backfilled before they existed. Resumable; stop the chain's backfill or follower first.
 */
import { parseArgs } from "node:util";
import { chainsIn } from "../src/query/views.js";
import { reindexChain } from "../src/store/reindex.js";
import { parseChainId } from "../src/util/chain.js";

const { values } = parseArgs({
	options: { "data-dir": { type: "string", default: "data" }, chain: { type: "string", multiple: true } },
});
const dataDir = values["data-dir"] as string;
const chains = values.chain ?? chainsIn(dataDir);
for (const id of chains) {
	const started = performance.now();
	const n = await reindexChain(dataDir, parseChainId(id), (from, to) =>
		process.stderr.write(`${id}: indexed blocks ${from}..${to}\n`),
	);
	process.stdout.write(`${id}: ${n} chunks indexed in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}
