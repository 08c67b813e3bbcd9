/** Writes data/README.md from the dataset schemas (`npm run data-readme`); a test keeps it current. */
import { writeFileSync } from "node:fs";
import { dataReadme } from "../src/store/data-readme.js";

writeFileSync(new URL("../data/README.md", import.meta.url), dataReadme());
