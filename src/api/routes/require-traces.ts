import type { DatasetName } from "../../extract/rows.js";
import type { Snapshot } from "../../query/store/store.js";
import { ApiError } from "../errors.js";

/** Trace-only datasets are absent (not empty) for chains exported without traces: say so. */
export function requireTraces(db: Snapshot, dataset: DatasetName) {
	const chain = db.chain;
	if (!db.hasDataset(dataset)) {
		throw new ApiError(
			503,
			"TRACES_UNAVAILABLE",
			`${chain} was exported without traces, so ${dataset} is unavailable; backfill it from a node with trace_block or debug_traceBlockByNumber`,
		);
	}
}
