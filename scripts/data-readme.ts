/** Writes data/README.md from the dataset schemas (`npm run data-readme`); a test keeps it current. */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { dataReadme } from "../src/store/data-readme.js";
import { startCli } from "../src/util/cli.js";

// No flags: --help says what it does, anything else is a mistake (exit 2 with the usage).
parseArgs({
	args: startCli({ usage: "usage: npm run data-readme   (writes data/README.md from the dataset schemas)" }),
	options: {},
});
writeFileSync(new URL("../data/README.md", import.meta.url), dataReadme());
