import { DATASETS, type DatasetRows } from "../extract/rows.js";

/** The rows of blocks [from, to] out of a range's rows (rows carry their block number). */
export function sliceRows(rows: DatasetRows, from: number, to: number): DatasetRows {
	const out = {} as Record<string, unknown[]>;
	for (const d of DATASETS) {
		const list = rows[d] as { block_number?: number; number?: number }[];
		out[d] = list.filter((r) => {
			const n = (r.block_number ?? r.number) as number;
			return n >= from && n <= to;
		});
	}
	return out as unknown as DatasetRows;
}
