import type { DuckDBConnection } from "@duckdb/node-api";
import { SqlRefusedError } from "./sql-refusals.js";

/*
 * The catalog and settings functions are not served to API keys (issue 27): duckdb_settings() and
 * current_setting('allowed_paths') name every listed file by its absolute path, duckdb_views()
 * and information_schema show the views' definitions, duckdb_extensions() the extension folder.
 * Scrubbing their answers (sql-scrub.ts) would not be enough: reverse(current_setting(...)) or a
 * cast to BLOB carries the path past any scrub. So they are refused by name, on DuckDB's own
 * parse tree (json_serialize_sql: names as DuckDB reads them, case and quotes undone), and so is
 * every way to run SQL built at run time (query(), query_table(), json_execute_serialized_sql()),
 * which would hide a name from that tree; and the few table functions that change the instance
 * though its configuration is locked (logging, profiling, checkpoints).
 */

const FUNCTIONS = new Set([
	"current_setting",
	"query",
	"query_table",
	"json_execute_serialized_sql",
	"which_secret",
	"getenv",
	// Table functions that change the instance and survive lock_configuration: logging (to the
	// server's stdout, or naming every file a statement opens), profiling, checkpoints.
	"enable_logging",
	"disable_logging",
	"truncate_duckdb_logs",
	"enable_profiling",
	"disable_profiling",
	"checkpoint",
	"force_checkpoint",
]);
const FUNCTION_PREFIXES = ["duckdb_", "pragma_"];
const SCHEMAS = new Set(["information_schema", "pg_catalog"]);
const TABLE_PREFIXES = ["duckdb_", "pragma_", "sqlite_", "pg_"];

/** Names the text uses that are refused, for a statement DuckDB cannot serialize (a PIVOT): a plain search. */
const TEXT_PATTERN = new RegExp(
	`\\b(${[...FUNCTIONS, ...SCHEMAS].join("|")}|(${[...FUNCTION_PREFIXES, ...TABLE_PREFIXES].join("|")})\\w+)\\b`,
	"i",
);

function forbiddenName(tree: unknown): string | null {
	const stack: unknown[] = [tree];
	while (stack.length > 0) {
		const node = stack.pop();
		if (Array.isArray(node)) stack.push(...node);
		else if (node !== null && typeof node === "object") {
			const n = node as Record<string, unknown>;
			const fn = typeof n.function_name === "string" ? n.function_name.toLowerCase() : null;
			if (fn && (FUNCTIONS.has(fn) || FUNCTION_PREFIXES.some((p) => fn.startsWith(p)))) return `${fn}()`;
			if (n.type === "BASE_TABLE") {
				const table = String(n.table_name ?? "").toLowerCase();
				const schema = String(n.schema_name ?? "").toLowerCase();
				const catalog = String(n.catalog_name ?? "").toLowerCase();
				if (SCHEMAS.has(schema) || SCHEMAS.has(catalog)) return `${schema || catalog}.${table}`;
				if (TABLE_PREFIXES.some((p) => table.startsWith(p))) return table;
			}
			stack.push(...Object.values(n));
		}
	}
	return null;
}

/** Throws 400 SQL_FORBIDDEN if the statement reads the catalog, the settings, or runs SQL it builds. */
export async function refuseIntrospection(conn: DuckDBConnection, sql: string): Promise<void> {
	const serialize = await conn.prepare("SELECT json_serialize_sql($1::VARCHAR)");
	serialize.bindVarchar(1, sql);
	const text = String((await serialize.runAndReadAll()).getRows()[0]?.[0] ?? "");
	serialize.destroySync();
	const tree = JSON.parse(text) as { error?: boolean };
	const name = tree.error ? (TEXT_PATTERN.exec(sql)?.[1]?.toLowerCase() ?? null) : forbiddenName(tree);
	if (name)
		throw new SqlRefusedError(
			400,
			"SQL_FORBIDDEN",
			`${name} is not served here: the catalog, the settings and SQL built at run time say things about the server, not the chain; the views and their columns are in data/README.md`,
		);
}
