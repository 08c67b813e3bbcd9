import { defineConfig } from "vitest/config";
import SlowFirstSequencer from "./test/setup/sequencer.js";

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts"],
		// Tests start real anvil nodes and DuckDB; the CI machine has 2 cores.
		testTimeout: 120_000,
		hookTimeout: 120_000,
		maxWorkers: 2,
		// The slowest files first when Vitest has no timings of its own: test/setup/sequencer.ts.
		sequence: { sequencer: SlowFirstSequencer },
		// Names the file of a worker that died (Vitest does not): test/setup/worker-deaths.ts.
		globalSetup: ["test/setup/worker-deaths.ts"],
		setupFiles: ["test/setup/file-journal.ts"],
		// Each file's heap in the report: a file that grows toward the limit shows before it aborts.
		logHeapUsage: true,
	},
});
