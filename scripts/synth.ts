/**
 * `npm run synth -- --scale S|M|L [--data-dir data/synth-S] [--chain eip155-1] [--partition-size N] [--compact-rows N]`:
 * writes a mainnet-shaped synthetic chain in the backfill's layout (src/synth/scales.ts says
 * what each scale holds), then records what benchmarks should query in `<chain>.targets.json`.
 * Re-running resumes: chunks already in the manifest are kept.
 */
import { parseArgs } from "node:util";
import { SCALES, type ScaleName } from "../src/synth/scales.js";
import { writeSynthChain } from "../src/synth/synth.js";
import { computeTargets, saveTargets } from "../src/synth/targets.js";
import { parseChainId } from "../src/util/chain.js";

const { values } = parseArgs({
	options: {
		scale: { type: "string", default: "S" },
		"data-dir": { type: "string" },
		chain: { type: "string", default: "eip155-1" },
		"partition-size": { type: "string" },
		"compact-rows": { type: "string" },
		threads: { type: "string" },
	},
});
const scaleName = values.scale as ScaleName;
if (!(scaleName in SCALES)) {
	process.stderr.write(`error: --scale must be one of ${Object.keys(SCALES).join(", ")}, not ${values.scale}\n`);
	process.exit(2);
}
const scale = SCALES[scaleName];
const partitionSize = Number(values["partition-size"] ?? scale.partitionSize);
if (!Number.isSafeInteger(partitionSize) || partitionSize < 1) {
	process.stderr.write(`error: --partition-size must be a positive integer, not ${values["partition-size"]}\n`);
	process.exit(2);
}
const compactRows = values["compact-rows"] === undefined ? undefined : Number(values["compact-rows"]);
if (compactRows !== undefined && (!Number.isSafeInteger(compactRows) || compactRows < 1)) {
	process.stderr.write(`error: --compact-rows must be a positive integer, not ${values["compact-rows"]}\n`);
	process.exit(2);
}
const dataDir = values["data-dir"] ?? `data/synth-${scaleName}`;
const chain = parseChainId(values.chain);
const started = performance.now();
const seconds = () => ((performance.now() - started) / 1000).toFixed(1);
const result = await writeSynthChain({
	scale,
	chain,
	dataDir,
	partitionSize,
	compactRows,
	threads: values.threads ? Number(values.threads) : undefined,
	onChunk: (e, done, total) =>
		process.stderr.write(
			`chunk ${done}/${total}: blocks ${e.from}..${e.to}, ${e.rows.transfers} transfers (${seconds()}s)\n`,
		),
});
process.stderr.write(`wrote ${JSON.stringify(result.rows)} in ${seconds()}s; picking benchmark targets\n`);
const path = await saveTargets(dataDir, await computeTargets(dataDir, chain.id));
process.stdout.write(
	`synth ${scaleName}: ${dataDir}/${chain.id} (${result.chunks} chunks), targets in ${path} (${seconds()}s)\n`,
);
