/*
 * The process a user's statement runs in (started by sql-processes.ts, one statement at a time):
 * it takes a job over IPC, runs it with runUserSql, and sends the columns, each chunk of rows
 * (waiting until each is handed over, so a large answer does not pile up here) and the end. A
 * refusal goes back as its status and code; anything else as a failure. When the API process
 * goes, the IPC channel closes and this process ends with it.
 */
import type { Manifest } from "../../store/format/records.js";
import type { SqlColumn } from "./result-columns.js";
import type { SqlLimits } from "./sql-limits.js";
import { SqlRefusedError } from "./sql-refusals.js";
import { runUserSql } from "./user-sql.js";

export interface SqlJob {
	sql: string;
	dataDir: string;
	manifest: Manifest | null;
	limits: SqlLimits;
	parquet: boolean;
}

export type ChildMessage =
	| { type: "ready" }
	| { type: "columns"; columns: SqlColumn[] }
	| { type: "rows"; rows: unknown[][] }
	| { type: "done"; elapsedMs: number; rows: number; parquet?: Uint8Array }
	| { type: "refused"; status: 400 | 503; code: string; message: string }
	| { type: "failed"; message: string };

const send = (m: ChildMessage) =>
	new Promise<void>((resolve, reject) => {
		if (!process.send) return reject(new Error("sql-child: no IPC channel (start it with sql-processes.ts)"));
		process.send(m, undefined, {}, (err) => (err ? reject(err) : resolve()));
	});

process.on("disconnect", () => process.exit(0));
process.on("message", (job: SqlJob) => {
	void (async () => {
		try {
			const result = await runUserSql({
				...job,
				sink: {
					columns: (columns) => void send({ type: "columns", columns }),
					// The API process counts the bytes in its own encoding (and stops this process past the limit).
					rows: async (rows) => {
						await send({ type: "rows", rows });
						return 0;
					},
				},
			});
			await send({ type: "done", elapsedMs: result.elapsedMs, rows: result.rows, parquet: result.parquet });
		} catch (err) {
			await send(
				err instanceof SqlRefusedError
					? { type: "refused", status: err.status, code: err.code, message: err.message }
					: { type: "failed", message: String((err as Error)?.message ?? err).split("\n")[0] ?? "" },
			);
		}
	})();
});
await send({ type: "ready" });
