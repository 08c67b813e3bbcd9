/**
 * DuckDB column types (as `DESCRIBE` prints them) to Delta Lake schema types (PROTOCOL.md,
 * "Schema Serialization Format"). Delta has no unsigned integers: a file with one is refused with
 * the way out (the store writes signed types; `npm run reindex` upgrades older folders).
 */
export type DeltaType =
	| string
	| { type: "array"; elementType: DeltaType; containsNull: boolean }
	| { type: "map"; keyType: DeltaType; valueType: DeltaType; valueContainsNull: boolean }
	| { type: "struct"; fields: DeltaField[] };

export interface DeltaField {
	name: string;
	type: DeltaType;
	nullable: boolean;
	metadata: Record<string, never>;
}

const PRIMITIVES: Record<string, string> = {
	BIGINT: "long",
	INTEGER: "integer",
	SMALLINT: "short",
	TINYINT: "byte",
	BOOLEAN: "boolean",
	DOUBLE: "double",
	FLOAT: "float",
	VARCHAR: "string",
	BLOB: "binary",
	DATE: "date",
	"TIMESTAMP WITH TIME ZONE": "timestamp",
	TIMESTAMP: "timestamp_ntz",
};

export class UnsupportedTypeError extends Error {}

/** The Delta type of a DuckDB type text, e.g. `STRUCT("index" BIGINT, address VARCHAR)[]`. */
export function deltaType(duck: string): DeltaType {
	const t = duck.trim();
	if (t.endsWith("[]")) return { type: "array", elementType: deltaType(t.slice(0, -2)), containsNull: true };
	const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(t);
	if (decimal) return `decimal(${decimal[1]},${decimal[2]})`;
	if (t.startsWith("STRUCT(") && t.endsWith(")"))
		return { type: "struct", fields: splitTop(t.slice(7, -1)).map(structField) };
	if (t.startsWith("MAP(") && t.endsWith(")")) {
		const [k, v] = splitTop(t.slice(4, -1));
		return { type: "map", keyType: deltaType(k ?? ""), valueType: deltaType(v ?? ""), valueContainsNull: true };
	}
	const primitive = PRIMITIVES[t];
	if (primitive) return primitive;
	throw new UnsupportedTypeError(
		`column type ${t} has no Delta Lake equivalent${/^U(BIG|SMALL|TINY|HUGE)?INT/.test(t) ? " (an unsigned type: run `npm run reindex` to upgrade the folder to signed types)" : ""}`,
	);
}

/** A struct member `name TYPE` (the name possibly double-quoted). */
function structField(member: string): DeltaField {
	const m = /^("(?:[^"]|"")*"|[^\s]+)\s+(.+)$/s.exec(member.trim());
	if (!m) throw new UnsupportedTypeError(`cannot read struct member ${member}`);
	const raw = m[1] as string;
	const name = raw.startsWith('"') ? raw.slice(1, -1).replaceAll('""', '"') : raw;
	return { name, type: deltaType(m[2] as string), nullable: true, metadata: {} };
}

/** Splits at the commas outside parentheses and quotes. */
function splitTop(s: string): string[] {
	const out: string[] = [];
	let depth = 0;
	let quoted = false;
	let start = 0;
	for (let i = 0; i < s.length; i++) {
		const c = s[i];
		if (c === '"') quoted = !quoted;
		else if (!quoted && c === "(") depth++;
		else if (!quoted && c === ")") depth--;
		else if (!quoted && depth === 0 && c === ",") {
			out.push(s.slice(start, i));
			start = i + 1;
		}
	}
	out.push(s.slice(start));
	return out.map((p) => p.trim()).filter((p) => p.length > 0);
}

/** The `schemaString` of a table with these columns (name, DuckDB type), every field nullable. */
export function schemaString(columns: readonly { name: string; type: string }[]): string {
	const fields: DeltaField[] = columns.map((c) => ({
		name: c.name,
		type: deltaType(c.type),
		nullable: true,
		metadata: {},
	}));
	return JSON.stringify({ type: "struct", fields });
}
