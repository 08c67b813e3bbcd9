import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/util/logger.js";

/**
 * A writer's log names files relative to its data folder (issue 27): the absolute path an error
 * of DuckDB's or of the file system carries is cut to the part inside the folder.
 */
const write = process.stderr.write.bind(process.stderr);
afterEach(() => {
	process.stderr.write = write;
});
function captured(log: (logger: ReturnType<typeof createLogger>) => void, dataDir?: string): string {
	let out = "";
	process.stderr.write = ((chunk: string) => {
		out += chunk;
		return true;
	}) as typeof process.stderr.write;
	try {
		log(createLogger(dataDir === undefined ? {} : { dataDir }));
	} finally {
		process.stderr.write = write;
	}
	return out;
}

describe("the writers' logger", () => {
	it("names files inside the data folder relative to it, in every level, however the folder was given", () => {
		const file = join(resolve("some-lake"), "eip155-1", "transfers", "transfers_0_9_g1.parquet");
		const out = captured((l) => {
			l.error(`No magic bytes found at end of file '${file}'`);
			l.warn(`damaged: ${file}`);
		}, "./some-lake/");
		expect(out).toContain("ERROR No magic bytes found at end of file 'eip155-1/transfers/transfers_0_9_g1.parquet'");
		expect(out).toContain("WARN damaged: eip155-1/transfers/transfers_0_9_g1.parquet");
		expect(out).not.toContain(resolve("some-lake"));
	});

	it("leaves paths outside the folder, and every path when no folder is given, as they are", () => {
		const outside = resolve("other-lake", "x.parquet");
		expect(captured((l) => l.warn(`at ${outside}`), "some-lake")).toContain(`at ${outside}`);
		const inside = resolve("some-lake", "x.parquet");
		expect(captured((l) => l.warn(`at ${inside}`))).toContain(`at ${inside}`);
	});
});
