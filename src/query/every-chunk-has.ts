import type { DatasetName } from "../extract/rows.js";
import type { IndexName } from "../store/format/indexes.js";
import type { Snapshot } from "./store/store.js";

/**
 * Whether every chunk with `dataset` has `index` (its own file, or a run): then the index answers
 * alone; a folder written before the kind existed reads the older one until `npm run reindex`.
 */
export const everyChunkHas = (db: Snapshot, dataset: DatasetName, index: IndexName): boolean =>
	db.chunks().every((c) => !c.datasets.includes(dataset) || db.indexed(index, c));
