import type { DuckDBConnection } from "@duckdb/node-api";
import { LOOKUP_TABLE } from "../../store/files/lookup-db-writer.js";
import { chainDir, partitionPath } from "../../store/format/layout.js";
import type { Manifest } from "../../store/format/records.js";
import { lookupDbOf } from "../../store/indexes/lookup-db.js";
import { sqlString as quote } from "../../util/sql-string.js";

/**
 * The lookup databases (store/indexes/lookup-db.ts) a store has attached to its DuckDB instance,
 * read-only, each under an alias of its own (`lookup_<n>`, never reused): attached the first time
 * a lookup needs one, once for every connection (an attachment is the instance's), and detached a
 * while after its chain's manifest stops listing it.
 */
export interface LookupDbs {
	/** Whether database `path` may be read (not found unattachable). */
	usable(path: string): boolean;
	/** The relation of database `path` (its table under its alias): sync, for the expander. */
	relation(path: string): string;
	/**
	 * Attaches those of `paths` not attached yet, through `conn` (any of the instance's). False if
	 * one could not be (missing, damaged): it is not usable from then on, and its Parquet parts answer.
	 */
	attach(conn: DuckDBConnection, paths: readonly string[]): Promise<boolean>;
	/**
	 * Once per manifest state: detaches the databases of its chain that it no longer lists and that
	 * have been unlisted for `graceMs` (a request of an older snapshot may read one that long).
	 */
	sweep(conn: DuckDBConnection, manifest: Manifest, graceMs: number): Promise<void>;
}

type Attached = { alias: string; ready?: Promise<void>; unlistedAt?: number };

export function lookupDbs(dataDir: string): LookupDbs {
	const byPath = new Map<string, Attached>();
	const unusable = new Set<string>();
	const swept = new WeakSet<Manifest>();
	let next = 0;
	const entry = (path: string) => {
		let a = byPath.get(path);
		if (!a) {
			a = { alias: `lookup_${++next}` };
			byPath.set(path, a);
		}
		return a;
	};
	return {
		usable: (path) => !unusable.has(path),
		relation: (path) => `${entry(path).alias}.${LOOKUP_TABLE}`,
		async attach(conn, paths) {
			const done = await Promise.all(
				paths.map((p) => {
					const a = entry(p);
					a.ready ??= conn.run(`ATTACH IF NOT EXISTS ${quote(p)} AS ${a.alias} (READ_ONLY)`).then(() => {});
					return a.ready.then(
						() => true,
						() => {
							unusable.add(p);
							return false;
						},
					);
				}),
			);
			return done.every(Boolean);
		},
		async sweep(conn, manifest, graceMs) {
			if (swept.has(manifest)) return;
			swept.add(manifest);
			const listed = new Set(
				(manifest.runs ?? []).flatMap((r) => lookupDbOf(r, partitionPath(dataDir, manifest.chain, r.index, r))),
			);
			const folder = `${chainDir(dataDir, manifest.chain)}/`;
			const now = performance.now();
			for (const [path, a] of byPath) {
				if (!path.startsWith(folder) || listed.has(path)) continue;
				a.unlistedAt ??= now;
				if (now - a.unlistedAt < graceMs) continue;
				byPath.delete(path);
				unusable.delete(path);
				// (A statement still prepared on it would fail if run again; none will be: the expander
				// names listed databases only, and aliases are never reused.)
				await a.ready?.then(() => conn.run(`DETACH DATABASE IF EXISTS ${a.alias}`)).catch(() => {});
			}
		},
	};
}
