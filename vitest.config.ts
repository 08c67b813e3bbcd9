import { defineConfig } from "vitest/config";

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts"],
		// Tests start real anvil nodes and DuckDB; the CI machine has 2 cores.
		testTimeout: 120_000,
		hookTimeout: 120_000,
		maxWorkers: 2,
	},
});
