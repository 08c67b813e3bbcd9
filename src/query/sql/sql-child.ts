/*
 * The process a user's statement runs in (started by sql-processes.ts, one statement at a time):
 * it takes a job over IPC, runs it with runUserSql, and sends the columns, each chunk of rows
 * (waiting until each is handed over, so a large answer does not pile up here) and the end. A
 * refusal goes back as its status and code; anything else as a failure. When the API process
 * goes, the IPC channel closes and this process ends with it.
 */
import type { ChildMessage, SqlJob, STOP } from "./sql-job.js";
import { SqlRefusedError } from "./sql-refusals.js";
import { runUserSql } from "./user-sql.js";

const send = (m: ChildMessage) =>
	new Promise<void>((resolve, reject) => {
		if (!process.send) return reject(new Error("sql-child: no IPC channel (start it with sql-processes.ts)"));
		process.send(m, undefined, {}, (err) => (err ? reject(err) : resolve()));
	});

let stopping = false;

process.on("disconnect", () => process.exit(0));
process.on("message", (message: SqlJob | typeof STOP) => {
	if (!("sql" in message)) {
		stopping = true;
		return;
	}
	const job = message;
	stopping = false;
	void (async () => {
		try {
			const result = await runUserSql({
				...job,
				sink: {
					columns: (columns) => void send({ type: "columns", columns }),
					// The API process counts the bytes in its own encoding, and says STOP past the limit.
					rows: async (rows) => {
						if (stopping) throw new SqlRefusedError(400, "RESPONSE_TOO_LARGE", "stopped by the API process");
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
