/**
 * How many holdings each token has in row groups of its own in the holder ranks files, read once
 * per ranks entry from its row-group statistics: apart from the store because only a token's
 * holders pages ask it (Snapshot.ranked), to choose between the ranks and summing the index files.
 */
import { rankFiles } from "../../store/format/manifest.js";
import { type Manifest, RANKS } from "../../store/format/records.js";
import { sqlString as quote } from "../../util/sql-string.js";
import type { RunQuery } from "./run-query.js";
import type { StoreOptions } from "./store-options.js";

/** `run` reads the statistics (with a whole `budgetMs` of its own); `options.files`: a bucket's files are held while read. */
export function rankedCounts(
	dataDir: string,
	options: Pick<StoreOptions, "files">,
	budgetMs: number,
	run: RunQuery,
): (manifest: Manifest | null) => Promise<Map<string, number>> {
	// Per ranks file, the tokens with row groups of their own and how many holdings those hold,
	// from the file's row-group statistics (read once: a file name is never reused; only the
	// listed file's are kept).
	const ranked = new Map<string, Promise<Map<string, number>>>();
	const rankedCounts = (manifest: Manifest | null): Promise<Map<string, number>> => {
		// (Every key-range part's; named by the first, as file names are never reused.)
		const paths = rankFiles(dataDir, manifest, RANKS);
		const [path] = paths;
		if (!path) return Promise.resolve(new Map());
		let p = ranked.get(path);
		if (!p) {
			ranked.clear();
			p = (async () => {
				const release = options.files ? await options.files.hold(paths) : () => {};
				try {
					const rows = await run(
						manifest,
						`SELECT stats_min_value AS token, sum(row_group_num_rows) AS n FROM parquet_metadata([${paths.map(quote).join(", ")}])
						 WHERE path_in_schema = 'token' AND stats_min_value = stats_max_value GROUP BY 1`,
						{},
						{ leftMs: budgetMs, since: performance.now() },
					);
					return new Map(rows.map((r) => [String(r.token), Number(r.n)]));
				} finally {
					release();
				}
			})();
			ranked.set(path, p);
			// Not kept when it failed: the next request tries again (and sums meanwhile).
			p.catch(() => ranked.delete(path));
		}
		return p.catch(() => new Map());
	};
	return rankedCounts;
}
