/**
 * `npm run verify -- --data-dir data [--chain eip155-1] [--quick] [--restore-manifest]`: checks that
 * every file a chain's manifest lists exists, reads (every value; `--quick`: its Parquet footer
 * only) and holds the row count the manifest recorded. Prints each bad file with its blocks and
 * the command that repairs them; exits 1 if anything is bad, 0 if all is well, 2 on bad flags.
 * `--restore-manifest` puts a damaged manifest's previous generation back first (see README).
 */
import { parseArgs } from "node:util";
import { readManifestSafe } from "../src/store/format/manifest.js";
import { damagedRanges, repairCommand, restoreManifest, verifyChain } from "../src/store/repair/verify.js";
import { checkRuns, runRepairCommand } from "../src/store/repair/verify-runs.js";
import { chainsIn, isChainId } from "../src/util/chain.js";
import { runCli } from "../src/util/cli.js";
import { UserInputError } from "../src/util/errors.js";

const USAGE = `usage: npm run verify -- [--data-dir data] [--chain eip155-<n> ...] [--quick] [--restore-manifest]
  --data-dir <dir>       the lake's folder (CHAINLAKE_DATA_DIR; default data)
  --chain <chain>        a chain to check (repeatable; default every chain in the folder)
  --quick                read each file's Parquet footer only, not every value
  --restore-manifest     put a damaged manifest's previous generation back first`;

let dataDirGiven: string | undefined;
runCli({ usage: USAGE, dataDir: () => dataDirGiven }, async (argv) => {
	let values: { "data-dir"?: string; chain?: string[]; quick?: boolean; "restore-manifest"?: boolean };
	try {
		({ values } = parseArgs({
			args: argv,
			options: {
				"data-dir": { type: "string", default: process.env.CHAINLAKE_DATA_DIR || "data" },
				chain: { type: "string", multiple: true },
				quick: { type: "boolean", default: false },
				"restore-manifest": { type: "boolean", default: false },
			},
			strict: true,
			allowPositionals: false,
		}));
	} catch (err) {
		throw new UserInputError("INVALID_ARGS", `${(err as Error).message}\n${USAGE}`);
	}
	const dataDir = values["data-dir"] as string;
	dataDirGiven = dataDir;
	const present = chainsIn(dataDir);
	for (const c of values.chain ?? []) {
		if (!isChainId(c)) throw new UserInputError("INVALID_ARGS", `--chain ${c} is not of the form eip155-<n>\n${USAGE}`);
		if (!present.includes(c))
			throw new UserInputError("INVALID_ARGS", `${dataDir} has no folder for ${c}: check --data-dir and --chain`);
	}
	const chains = values.chain ?? present;
	if (chains.length === 0)
		throw new UserInputError("INVALID_ARGS", `${dataDir} holds no chain folder (eip155-<n>): check --data-dir`);

	let bad = 0;
	const say = (line: string) => process.stdout.write(`${line}\n`);
	for (const chain of chains) {
		if (values["restore-manifest"]) {
			const m = await restoreManifest(dataDir, chain);
			say(
				`${chain}: restored its manifest from the previous generation (${m.chunks.length} ranges; the damaged one is kept as _manifest.damaged.json)`,
			);
		}
		const r = await verifyChain(dataDir, chain, { full: !values.quick });
		if (r.manifestError) {
			bad++;
			say(`${chain}: ${r.manifestError}`);
			continue;
		}
		const manifest = readManifestSafe(dataDir, chain);
		const runProblems = manifest ? await checkRuns(dataDir, manifest) : [];
		if (r.problems.length === 0 && runProblems.length === 0) {
			say(
				`${chain}: ${r.chunks} ranges, ${r.files} files, ${manifest?.runs?.length ?? 0} merged index runs: every file ${values.quick ? "has its footer" : "reads"} and holds the rows recorded`,
			);
			continue;
		}
		bad++;
		// The datasets first: a rebuilt run is read from them, so their repair must come before.
		if (r.problems.length > 0) {
			say(`${chain}: ${r.problems.length} of ${r.files} files damaged:`);
			for (const p of r.problems) {
				const ghost = p.ghost ? " [reorged-out blocks: cannot be fetched again; the backfill unlists the file]" : "";
				say(`  ${p.file} (blocks ${p.from}..${p.to}): ${p.problem}${ghost}`);
			}
			say(
				"repair: fetch those blocks again (the backfill refetches damaged ranges under new names; stop the chain's follower first, or just restart it: at start it repairs the ranges it wrote itself):",
			);
			for (const [from, to] of damagedRanges(r.problems)) say(`  ${repairCommand(dataDir, chain, from, to)}`);
		}
		// Merged index runs: damaged ones hold nothing the datasets do not, so reindex rebuilds them.
		if (runProblems.length > 0) {
			say(`${chain}: ${runProblems.length} of ${manifest?.runs?.length ?? 0} merged index runs damaged:`);
			for (const p of runProblems) say(`  ${p.file} (blocks ${p.run.from}..${p.run.to}): ${p.problem}`);
			const then = r.problems.length > 0 ? ", after the backfill above" : "";
			say(
				`repair: rebuild them from the datasets${then} (with the chain's follower stopped):\n  ${runRepairCommand(dataDir, chain)}`,
			);
		}
	}
	return bad > 0 ? 1 : 0;
});
