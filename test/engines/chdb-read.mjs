// Reads Delta Lake tables with ClickHouse's own reader (chdb: ClickHouse embedded, an engine we
// did not write) and prints, per table, its column types and its rows as JSON. Run as a child
// process with the working directory `/`: chdb's deltaLakeLocal refuses a table outside the
// working directory at every query, and a vitest worker cannot change its own.
// Usage: node chdb-read.mjs <absolute table dir>...
import { queryAsync } from "chdb";

const SETTINGS =
	"SETTINGS output_format_json_quote_64bit_integers = 1, output_format_json_quote_decimals = 1, output_format_json_named_tuples_as_objects = 1";
const out = {};
for (const dir of process.argv.slice(2)) {
	const source = `deltaLakeLocal('${dir.replaceAll("'", "\\'")}')`;
	const described = await queryAsync(`DESCRIBE ${source}`, { format: "JSONEachRow" });
	const types = Object.fromEntries(
		described
			.text()
			.split("\n")
			.filter(Boolean)
			.map((l) => JSON.parse(l))
			.map((r) => [r.name, r.type]),
	);
	const read = await queryAsync(`SELECT * FROM ${source} ${SETTINGS}`, { format: "JSONEachRow" });
	const rows = read
		.text()
		.split("\n")
		.filter(Boolean)
		.map((l) => JSON.parse(l));
	out[dir] = { types, rows };
}
process.stdout.write(JSON.stringify(out));
