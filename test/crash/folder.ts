import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { INDEX_NAMES, INDEXES, type IndexDef, type IndexName } from "../../src/store/format/indexes.js";
import { partitionFileName, type RangeId } from "../../src/store/format/layout.js";
import type { Manifest } from "../../src/store/format/records.js";

/** The chain folder's manifest as it is on disk (replaced by a rename, so read whole), or null. */
export function readManifest(chainDir: string): Manifest | null {
	const file = join(chainDir, "_manifest.json");
	return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Manifest) : null;
}

/**
 * The last block the manifest lists (-1: none): folderState's storedHead from the manifest alone,
 * for the loops that poll it while a writer runs (folderState also walks the folder and replays
 * every Delta log, at each call).
 */
export function storedHeadOf(chainDir: string): number {
	return Math.max(-1, ...(readManifest(chainDir)?.chunks ?? []).map((c) => c.to));
}

/**
 * What a chain folder holds against what its manifest lists: after a crash and a restart there
 * must be no temporary file, no file the manifest does not list, and no listed file missing.
 * (Written from the layout rules, not with the store's own cleanup code, which is under test.)
 */
export function folderState(chainDir: string) {
	const m = readManifest(chainDir);
	const listed = new Set<string>();
	for (const c of m?.chunks ?? []) {
		for (const d of c.datasets) listed.add(join(d, partitionFileName(d, c)));
		// Index files, each with its key filter.
		for (const i of c.indexes ?? []) {
			listed.add(join(i, partitionFileName(i, c)));
			listed.add(join(i, `${partitionFileName(i, c)}.filter`));
		}
	}
	for (const g of m?.ghosts ?? []) listed.add(join("ghost_blocks", partitionFileName("ghost_blocks", g)));
	// Token metadata: one file of each table per range covered.
	for (const e of m?.metadata ?? [])
		for (const t of ["token_metadata", "token_uris", "opening_balances"]) listed.add(join(t, partitionFileName(t, e)));
	// The holder ranks (by token in key-range parts, part i > 0 named `.p<i>.parquet`; one file
	// before parts) with the wallet records (parts too), or a file of rows by holder before records;
	// the head ranks (an entry with `tokens`) in their own table's parts (none: no file).
	const parts = (table: string, r: RangeId, n: number) => {
		const name = partitionFileName(table, r);
		for (let i = 0; i < n; i++) listed.add(join(table, i === 0 ? name : name.replace(/\.parquet$/, `.p${i}.parquet`)));
	};
	for (const r of m?.ranks ?? []) {
		if (r.tokens !== undefined) parts("erc20_head_ranks", r, r.rankParts ?? 0);
		else if (r.walletRecordParts === undefined) {
			parts("erc20_ranks", r, 1);
			parts("erc20_wallets", r, 1);
		} else {
			parts("erc20_ranks", r, r.rankParts ?? 1);
			parts("erc20_wallet_records", r, r.walletRecordParts);
		}
	}
	// Merged index runs, each with its key filter beside it, and the block and transaction runs their lookup databases.
	for (const r of m?.runs ?? []) {
		listed.add(join(r.index, partitionFileName(r.index, r)));
		listed.add(join(r.index, `${partitionFileName(r.index, r)}.filter`));
		if (r.lookup_db) listed.add(join(r.index, `${partitionFileName(r.index, r)}.duckdb`));
	}
	const files = existsSync(chainDir)
		? readdirSync(chainDir, { recursive: true, withFileTypes: true })
				.filter((e) => e.isFile())
				.map((e) => relative(chainDir, join(e.parentPath, e.name)))
		: [];
	const present = new Set(files);
	const retained = deltaRetained(chainDir);
	// Files retired and kept for readers until due, as `_retired.json` notes them (src/store/retired-journal.ts).
	// The writer empties it in place (writes "[]" over it, not by a rename): read by a loop polling
	// while it runs, between the truncation and the write, it is an empty file, which notes nothing.
	const journal = join(chainDir, "_retired.json");
	const journalText = existsSync(journal) ? readFileSync(journal, "utf8") : "";
	const now = Date.now();
	for (const e of journalText === "" ? [] : (JSON.parse(journalText) as { due: number; files: string[] }[]))
		if (e.due > now) for (const f of e.files) retained.add(f);
	return {
		manifest: m,
		listed: [...listed],
		tmp: files.filter((f) => f.endsWith(".tmp")),
		// Files a Delta log still lists, or removed within its retention, are kept for outside
		// readers (src/store/delta/); the logs themselves are no data files.
		unlisted: files.filter(
			(f) =>
				f !== "_manifest.json" &&
				f !== "_manifest.prev.json" &&
				f !== "_lock" &&
				// The writer's status for the API processes (src/follow/status-file.ts): no data.
				f !== "_status.json" &&
				f !== "_retired.json" &&
				!listed.has(f) &&
				!f.includes("/_delta_log/") &&
				!retained.has(f),
		),
		missing: [...listed].filter((f) => !present.has(f)),
		// A pid in `_lock` (kept, emptied on release): a run holds the lock, or one died holding it.
		locked: present.has("_lock") && readFileSync(join(chainDir, "_lock"), "utf8") !== "",
		storedHead: Math.max(-1, ...(m?.chunks ?? []).map((c) => c.to)),
	};
}

/**
 * The files the chain's Delta logs name (added, or removed and not yet vacuumed), replayed from
 * the JSON commits (the tests never age a log past its retention, so commit 0 is always there).
 */
function deltaRetained(chainDir: string): Set<string> {
	const out = new Set<string>();
	if (!existsSync(chainDir)) return out;
	for (const table of readdirSync(chainDir)) {
		const log = join(chainDir, table, "_delta_log");
		if (!existsSync(log)) continue;
		const named = new Set<string>();
		for (const c of readdirSync(log)
			.filter((n) => /^\d{20}\.json$/.test(n))
			.sort())
			for (const line of readFileSync(join(log, c), "utf8").split("\n").filter(Boolean)) {
				const a = JSON.parse(line) as { add?: { path: string }; remove?: { path: string } };
				const path = a.add?.path ?? a.remove?.path;
				if (path) named.add(decodeURIComponent(path));
			}
		for (const n of named) out.add(join(table, n));
	}
	return out;
}

const quote = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * Reads every file the manifest lists, by dataset, index and ghost_blocks, as a reader would:
 * throws if one is missing or not whole Parquet. Returns each one's rows (in file order of the
 * sorted chunk list) for comparisons.
 */
export async function readListed(chainDir: string): Promise<Record<string, unknown[]>> {
	const { manifest, listed } = folderState(chainDir);
	const byName = new Map<string, string[]>();
	const chunks = [...(manifest?.chunks ?? [])].sort((a, b) => a.from - b.from);
	const runs = manifest?.runs ?? [];
	for (const r of runs)
		byName.set(r.index, [...(byName.get(r.index) ?? []), join(chainDir, r.index, partitionFileName(r.index, r))]);
	for (const c of chunks) {
		for (const d of [...c.datasets, ...(c.indexes ?? [])]) {
			// An index's rows of a chunk a run covers are the run's (a chunk file there would be a duplicate).
			if (runs.some((r) => r.index === d && r.from <= c.from && c.to <= r.to)) continue;
			byName.set(d, [...(byName.get(d) ?? []), join(chainDir, d, partitionFileName(d, c))]);
		}
	}
	const ghosts = listed.filter((f) => f.startsWith("ghost_blocks/")).map((f) => join(chainDir, f));
	if (ghosts.length > 0) byName.set("ghost_blocks", ghosts);
	const db = await DuckDBInstance.create(":memory:");
	const conn = await db.connect();
	try {
		const out: Record<string, unknown[]> = {};
		for (const [name, files] of byName) {
			const order =
				name === "blocks" || name === "ghost_blocks"
					? "number, hash"
					: INDEX_NAMES.includes(name as never)
						? INDEXES[name as IndexName].sortKey
						: "id";
			const source = `read_parquet([${files.map(quote).join(", ")}])`;
			// Balance deltas hold one row per holding per file, and how blocks group into files
			// depends on when merges ran: compared as what they sum to over the whole chain.
			const def: IndexDef | undefined = INDEX_NAMES.includes(name as never) ? INDEXES[name as IndexName] : undefined;
			const rows = def?.merge ? def.merge(source) : `SELECT * FROM ${source}`;
			const r = await conn.runAndReadAll(`${rows} ORDER BY ${order}`);
			out[name] = r.getRowObjectsJson();
		}
		return out;
	} finally {
		conn.closeSync();
		db.closeSync();
	}
}
