import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { DATASETS } from "../../src/extract/rows.js";
import { INDEX_NAMES } from "../../src/store/format/indexes.js";
import { chainDir } from "../../src/store/format/layout.js";
import {
	GHOST_DATASET,
	ghostFiles,
	listedFiles,
	loadManifest,
	metadataFiles,
	rankFiles,
} from "../../src/store/format/manifest.js";
import { METADATA_TABLE_NAMES, RANK_TABLES } from "../../src/store/format/records.js";
import { indexFiles } from "../../src/store/indexes/listing.js";

/**
 * Checks a chain folder's Delta Lake logs against PROTOCOL.md and against the manifest, reading
 * the logs with code of its own (not the exporter's reader): every commit's actions carry the
 * required fields, version 0 opens with protocol and metadata, versions have no gaps, each
 * checkpoint holds exactly the replayed state, every table lists exactly the files the API
 * reads, and every file's statistics are the file's true row count, minima, maxima and nulls.
 * Returns the live files per table (absolute paths) and the tombstoned ones.
 */
export async function checkDeltaLogs(dataDir: string, chainNumber: number) {
	const chain = `eip155-${chainNumber}`;
	const m = await loadManifest(dataDir, chain, chainNumber);
	const expected: Record<string, string[]> = {};
	for (const d of DATASETS) expected[d] = listedFiles(dataDir, m, d);
	for (const i of INDEX_NAMES) expected[i] = indexFiles(dataDir, m, i).map((f) => f.path);
	expected[GHOST_DATASET] = ghostFiles(dataDir, m);
	for (const t of METADATA_TABLE_NAMES) expected[t] = metadataFiles(dataDir, m, t);
	for (const t of RANK_TABLES) expected[t] = rankFiles(dataDir, m, t);

	const db = await DuckDBInstance.create(":memory:");
	const conn = await db.connect();
	const problems: string[] = [];
	const live: Record<string, string[]> = {};
	const removed: Record<string, string[]> = {};
	try {
		for (const [table, files] of Object.entries(expected)) {
			const dir = join(chainDir(dataDir, chain), table);
			const log = join(dir, "_delta_log");
			if (!existsSync(log)) {
				if (files.length > 0) problems.push(`${table}: no _delta_log, but ${files.length} files listed`);
				continue;
			}
			const versions = readdirSync(log)
				.filter((n) => /^\d{20}\.json$/.test(n))
				.map((n) => Number(n.slice(0, 20)))
				.sort((a, b) => a - b);
			versions.forEach((v, i) => {
				if (v !== i) problems.push(`${table}: commit ${i} missing (found ${v})`);
			});
			const adds = new Map<string, Record<string, unknown>>();
			const removes = new Map<string, Record<string, unknown>>();
			let txn = -1;
			for (const v of versions) {
				const actions = readFileSync(join(log, `${String(v).padStart(20, "0")}.json`), "utf8")
					.split("\n")
					.filter((l) => l !== "")
					.map((l) => JSON.parse(l) as Record<string, Record<string, unknown>>);
				const kinds = actions.map((a) => Object.keys(a)[0]);
				if (v === 0 && !(kinds.includes("protocol") && kinds.includes("metaData")))
					problems.push(`${table}: version 0 lacks protocol or metaData (${kinds})`);
				for (const a of actions) {
					const [kind, body] = Object.entries(a)[0] as [string, Record<string, unknown>];
					const need = REQUIRED[kind];
					if (!need) problems.push(`${table}@${v}: unknown action ${kind}`);
					for (const f of need ?? []) if (!(f in body)) problems.push(`${table}@${v}: ${kind} lacks ${f}`);
					if (kind === "metaData") {
						const schema = JSON.parse(String(body.schemaString)) as { type: string; fields: unknown[] };
						if (schema.type !== "struct" || schema.fields.length === 0)
							problems.push(`${table}@${v}: bad schemaString`);
					}
					if (kind === "txn") txn = Number(body.version);
					if (kind === "add") {
						adds.set(String(body.path), body);
						removes.delete(String(body.path));
					}
					if (kind === "remove") {
						adds.delete(String(body.path));
						removes.set(String(body.path), body);
					}
				}
				const ckpt = join(log, `${String(v).padStart(20, "0")}.checkpoint.parquet`);
				if (existsSync(ckpt)) {
					const read = await conn.runAndReadAll(
						`SELECT "add".path AS a, remove.path AS r FROM read_parquet('${ckpt}') WHERE "add" IS NOT NULL OR remove IS NOT NULL`,
					);
					const rows = read.getRowObjectsJS();
					const ckAdds = rows.flatMap((r) => (r.a != null ? [String(r.a)] : [])).sort();
					if (JSON.stringify(ckAdds) !== JSON.stringify([...adds.keys()].sort()))
						problems.push(`${table}: checkpoint ${v} adds differ from the replayed log`);
				}
			}
			if (txn > (m.generation ?? 0)) problems.push(`${table}: txn ${txn} is past the manifest's generation`);
			const want = files.map((f) => f.slice(dir.length + 1)).sort();
			const got = [...adds.keys()].map(decodeURIComponent).sort();
			if (JSON.stringify(got) !== JSON.stringify(want))
				problems.push(`${table}: log lists ${JSON.stringify(got)}, the manifest ${JSON.stringify(want)}`);
			live[table] = got.map((n) => join(dir, n));
			removed[table] = [...removes.keys()].map((n) => join(dir, decodeURIComponent(n)));
			for (const [name, add] of adds) {
				const path = join(dir, decodeURIComponent(name));
				if (!existsSync(path)) {
					problems.push(`${table}: ${name} is live in the log but not on disk`);
					continue;
				}
				if (Number(add.size) !== statSync(path).size) problems.push(`${table}: ${name} size differs`);
				problems.push(...(await checkStats(conn, table, path, JSON.parse(String(add.stats)))));
			}
		}
	} finally {
		conn.closeSync();
		db.closeSync();
	}
	return { problems, live, removed, generation: m.generation ?? 0 };
}

const REQUIRED: Record<string, string[]> = {
	commitInfo: [],
	protocol: ["minReaderVersion", "minWriterVersion"],
	metaData: ["id", "format", "schemaString", "partitionColumns", "configuration"],
	txn: ["appId", "version"],
	add: ["path", "partitionValues", "size", "modificationTime", "dataChange"],
	remove: ["path", "dataChange"],
};

/** The file's true statistics against those the log claims (engines skip files on them). */
async function checkStats(
	conn: Awaited<ReturnType<DuckDBInstance["connect"]>>,
	table: string,
	path: string,
	stats: {
		numRecords: number;
		minValues: Record<string, unknown>;
		maxValues: Record<string, unknown>;
		nullCount: Record<string, unknown>;
	},
): Promise<string[]> {
	const out: string[] = [];
	const cols = new Set([...Object.keys(stats.minValues), ...Object.keys(stats.nullCount)]);
	const parts = ["count(*)::VARCHAR AS n"];
	for (const c of cols)
		parts.push(
			`min("${c}")::VARCHAR AS "min_${c}"`,
			`max("${c}")::VARCHAR AS "max_${c}"`,
			`count(*) - count("${c}") AS "nulls_${c}"`,
		);
	const row = (
		await conn.runAndReadAll(`SELECT ${parts.join(", ")} FROM read_parquet('${path}')`)
	).getRowObjectsJS()[0] as Record<string, unknown>;
	if (String(row.n) !== String(stats.numRecords))
		out.push(`${table}: ${path} numRecords ${stats.numRecords} != ${row.n}`);
	for (const c of cols) {
		if (c in stats.minValues && String(stats.minValues[c]) !== String(row[`min_${c}`]))
			out.push(`${table}: ${path} min ${c} ${stats.minValues[c]} != ${row[`min_${c}`]}`);
		if (c in stats.maxValues && String(stats.maxValues[c]) !== String(row[`max_${c}`]))
			out.push(`${table}: ${path} max ${c} ${stats.maxValues[c]} != ${row[`max_${c}`]}`);
		if (c in stats.nullCount && String(stats.nullCount[c]) !== String(row[`nulls_${c}`]))
			out.push(`${table}: ${path} nullCount ${c} ${stats.nullCount[c]} != ${row[`nulls_${c}`]}`);
	}
	return out;
}
