import type { Manifest } from "../../store/format/records.js";
import type { SqlColumn } from "./result-columns.js";
import type { SqlLimits } from "./sql-limits.js";

/*
 * What the API process and a SQL process (sql-child.ts) say to each other over IPC. Apart from
 * the child's own file, which runs as soon as it is imported.
 */

/** One statement to run, with everything runUserSql needs. */
export interface SqlJob {
	sql: string;
	dataDir: string;
	manifest: Manifest | null;
	limits: SqlLimits;
	parquet: boolean;
}

/** The API process no longer wants the rows (the answer passed its bytes): end at the next chunk. */
export const STOP = { type: "stop" } as const;

/** What a SQL process answers: ready once, then for each job its columns, rows and one end. */
export type ChildMessage =
	| { type: "ready" }
	| { type: "columns"; columns: SqlColumn[] }
	| { type: "rows"; rows: unknown[][] }
	| { type: "done"; elapsedMs: number; rows: number; parquet?: Uint8Array }
	| { type: "refused"; status: 400 | 503; code: string; message: string }
	| { type: "failed"; message: string };
