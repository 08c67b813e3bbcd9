import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The slowest test files, slowest first (the full run of 2026-11-26, each 25 s or more). Vitest
 * starts the files it has timed before longest first (its results cache, in
 * node_modules/.vite); without that cache (a fresh `npm ci`, as in CI) it starts the largest
 * files first, and a short file that takes long (load.test.ts: 88 lines, one of the slowest)
 * would start last and leave one of the two workers idle while it runs. So then these go first,
 * in this order, and the rest in Vitest's own. A file missing here only costs time, never a test.
 */
const SLOW_FIRST = [
	"test/store/runs.test.ts",
	// (Added after that run: its followed lake, about 60 s.)
	"test/store/repair-converges.test.ts",
	"test/crash/stop-signals.test.ts",
	"test/store/verify.test.ts",
	"test/api/load.test.ts",
	"test/store/upgrade-types.test.ts",
	"test/follow/reorg-balances.test.ts",
	"test/follow/reorg.test.ts",
	"test/api/keys-rules.test.ts",
	"test/query/index-listing.test.ts",
	"test/query/balances.test.ts",
	"test/store/delta-lake.test.ts",
	"test/synth/synth.test.ts",
	"test/query/nfts.test.ts",
	"test/cli/help.test.ts",
	"test/query/native.test.ts",
	"test/follow/first-hour.test.ts",
	"test/api/sql-isolation.test.ts",
];

/**
 * Under CHAINLAKE_CRASH_FULL=1 (npm run test:long), its crash series first, timed or not: Vitest's
 * timings of them come from `npm test` (CI runs it first), where they are a second or skipped.
 */
const CRASH_SERIES = ["test/crash/crash-points.test.ts", "test/follow/crash.test.ts"];

export default class SlowFirstSequencer extends BaseSequencer {
	override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
		const sorted = await this.slowFirst(files);
		if (process.env.CHAINLAKE_CRASH_FULL !== "1") return sorted;
		const series = (f: TestSpecification) => (CRASH_SERIES.includes(this.path(f)) ? 0 : 1);
		return [...sorted].sort((a, b) => series(a) - series(b));
	}

	private path(f: TestSpecification) {
		return relative(this.ctx.config.root, f.moduleId).replaceAll("\\", "/");
	}

	private async slowFirst(files: TestSpecification[]): Promise<TestSpecification[]> {
		const sorted = await super.sort(files);
		const timed = sorted.every((f) => this.ctx.cache.getFileTestResults(`${f.project.name}:${this.path(f)}`));
		if (timed) return sorted;
		const rank = (f: TestSpecification) => {
			const i = SLOW_FIRST.indexOf(this.path(f));
			return i === -1 ? SLOW_FIRST.length : i;
		};
		// Array.prototype.sort is stable: the files not listed keep Vitest's order.
		return [...sorted].sort((a, b) => rank(a) - rank(b));
	}
}
