/** A listed file that is missing or not whole, as the API may show it (no absolute path). */
export interface DamagedFile {
	/** Relative to the data folder: `eip155-1/logs/logs_..._g3.parquet`. */
	file: string;
	from: number;
	to: number;
	problem: string;
}

/**
 * A request needs data the server cannot read: a file its chain's manifest lists is missing or
 * damaged (DATA_DAMAGED), or the manifest itself is (MANIFEST_DAMAGED). Not the client's fault,
 * nor a bug: the API answers 503 with this message, which names the block ranges and what the
 * operator runs to repair them, and no file path.
 */
export class DamagedDataError extends Error {
	constructor(
		readonly code: "DATA_DAMAGED" | "MANIFEST_DAMAGED",
		message: string,
		readonly files: readonly DamagedFile[] = [],
	) {
		super(message);
		this.name = "DamagedDataError";
	}
}

/** The 503 message for damaged files of `chain`: the block ranges, and the commands that repair them. */
export function dataDamagedMessage(chain: string, files: readonly DamagedFile[]): string {
	const ranges: [number, number][] = [];
	for (const f of [...files].sort((a, b) => a.from - b.from)) {
		const last = ranges.at(-1);
		if (last && f.from <= last[1] + 1) last[1] = Math.max(last[1], f.to);
		else ranges.push([f.from, f.to]);
	}
	const names = [...new Set(files.map((f) => f.file.split("/")[1] ?? f.file))].join(", ");
	const commands = ranges
		.slice(0, 3)
		.map(
			([a, b]) =>
				`\`npm run backfill -- --chain ${chain} --rpc <node url> --data-dir <data folder> --from ${a} --to ${b}\``,
		)
		.join(", then ");
	return `blocks ${ranges.map(([a, b]) => `${a}..${b}`).join(", ")} of ${chain} cannot be served: stored data of them (${names}) is missing or damaged on the server; other blocks still answer. The operator repairs it with ${commands}${ranges.length > 3 ? " and the others `npm run verify` names" : ""} (\`npm run verify -- --chain ${chain}\` lists every damaged file)`;
}

/** The 503 message for a damaged manifest (`problem` says what is wrong, without its path). */
export const manifestDamagedMessage = (chain: string, problem: string): string =>
	`the manifest of ${chain} (its list of stored files) is damaged on the server: ${problem}; no data of ${chain} can be served until it is repaired. The operator runs \`npm run verify -- --chain ${chain}\`, which says how (\`--restore-manifest\` puts back its previous generation)`;
