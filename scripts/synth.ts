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
import { startCli, usageError } from "../src/util/cli.js";

const USAGE = `usage: npm run synth -- --scale S|M|L [--data-dir data/synth-<scale>] [--chain eip155-1] [flags]
  --scale <S|M|L>         the dataset's size (src/synth/scales.ts; default S)
  --data-dir <dir>        where to write it (default data/synth-<scale>)
  --chain <chain>         the chain id to write it as (default eip155-1)
  --partition-size <n>    blocks per chunk (default the scale's)
  --compact-rows <n>      rows a merged chunk may reach (default the backfill's)
  --threads <n>           DuckDB threads for writing (default DuckDB's)`;

const argv = startCli({ usage: USAGE, dataDir: () => values["data-dir"] });
const { values } = parseArgs({
	args: argv,
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
if (!(scaleName in SCALES)) usageError(`--scale must be one of ${Object.keys(SCALES).join(", ")}, not ${values.scale}`);
const scale = SCALES[scaleName];
const partitionSize = Number(values["partition-size"] ?? scale.partitionSize);
if (!Number.isSafeInteger(partitionSize) || partitionSize < 1)
	usageError(`--partition-size must be a positive integer, not ${values["partition-size"]}`);
const compactRows = values["compact-rows"] === undefined ? undefined : Number(values["compact-rows"]);
if (compactRows !== undefined && (!Number.isSafeInteger(compactRows) || compactRows < 1))
	usageError(`--compact-rows must be a positive integer, not ${values["compact-rows"]}`);
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
