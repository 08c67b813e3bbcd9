import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { backfillInto } from "../helpers/anvil-chain.js";

/**
 * Global setup: the Solidity workload run once on anvil and backfilled once (chain 31337,
 * 8-block partitions, no Delta Lake logs), kept as a template folder with the workload's result
 * beside it. The API tests that only read that chain (test/helpers/api.ts startApiOnWorkload)
 * each copy it instead of running anvil, the workload and the backfill again (test/api and the
 * examples, 17 files: 243 -> 229 s of CPU, docs/testing.md). Tests that talk to the node
 * afterwards start their own (startApiOnNode). Every vitest run builds it, 2.3-2.7 s before the
 * first file starts.
 */
export const WORKLOAD_CHAIN = 31337;
export const TEMPLATE_ENV = "CHAINLAKE_TEST_WORKLOAD";
/** The workload's result beside the template's data (bigints written as `{"$big": "..."}`). */
export const WORK_FILE = "work.json";

export default async function setup() {
	const dir = mkdtempSync(join(tmpdir(), "chainlake-workload-"));
	const anvil = await startAnvil({ chainId: WORKLOAD_CHAIN });
	try {
		const work = await runWorkload({ rpcUrl: anvil.url });
		await backfillInto(join(dir, "data"), anvil.url, WORKLOAD_CHAIN, { partitionSize: 8, lake: { delta: false } });
		writeFileSync(
			join(dir, WORK_FILE),
			JSON.stringify(work, (_k, v) => (typeof v === "bigint" ? { $big: v.toString() } : v)),
		);
	} finally {
		await anvil.stop();
	}
	process.env[TEMPLATE_ENV] = dir;
	return () => rmSync(dir, { recursive: true, force: true });
}
