import { parseArgs } from "node:util";
import { z } from "zod";
import type { TraceMode } from "../rpc/detect-traces.js";
import { LAKE_FLAG_OPTIONS, LAKE_USAGE, lakeFlags } from "../store/delta/lake-flags.js";
import type { LakeSettings } from "../store/format/records.js";
import { type ChainRef, isChainId, parseChainId } from "../util/chain.js";
import { UserInputError } from "../util/errors.js";
import { DEFAULT_CONCURRENCY, DEFAULT_PARTITION_SIZE } from "./backfill.js";

export interface BackfillOptions {
	chain: ChainRef;
	rpcUrls: string[];
	from: number;
	to: number | "latest";
	dataDir: string;
	traces: TraceMode;
	partitionSize: number;
	compactRows?: number;
	/** The Delta Lake export's settings given (delta/lake-flags.ts). */
	lake: Partial<LakeSettings>;
	concurrency: number;
	batchSize: number;
	verbose: boolean;
}

export const BACKFILL_USAGE = `usage: npm run backfill -- --chain eip155-<n> --rpc <url> [--rpc <url2>] --from <n> --to <n|latest>
       [--data-dir data] [--traces auto|parity|geth|off] [--partition-size 1000]
       [--compact-rows 8000000] [--concurrency 8] [--batch-size 100] [--verbose]
       ${LAKE_USAGE}
env:   CHAINLAKE_RPC_URLS (comma-separated) stands in for --rpc, CHAINLAKE_DATA_DIR for --data-dir`;

const blockNumber = (flag: string) =>
	z
		.string({ error: `${flag} is required` })
		.regex(/^\d{1,15}$/, `${flag} must be a block number (a non-negative integer)`)
		.transform(Number);

const positive = (flag: string, fallback: number) =>
	z
		.string()
		.regex(/^[1-9]\d{0,6}$/, `${flag} must be a positive integer`)
		.transform(Number)
		.default(fallback);

const schema = z.object({
	chain: z
		.string({ error: "--chain is required (e.g. --chain eip155-1)" })
		.refine((v) => isChainId(v), {
			error: (i) => `--chain ${JSON.stringify(i.input)} is not of the form eip155-<chain number> (e.g. eip155-1)`,
		})
		.transform((v) => parseChainId(v)),
	rpc: z
		.array(z.string().url("each --rpc must be an http(s) URL, e.g. http://127.0.0.1:8545"))
		.min(1, "--rpc is required (or CHAINLAKE_RPC_URLS)"),
	from: blockNumber("--from"),
	to: z.union([z.literal("latest"), blockNumber("--to")], { error: "--to must be a block number or latest" }),
	"data-dir": z.string().min(1).default("data"),
	traces: z
		.enum(["auto", "parity", "geth", "off"], { error: "--traces must be auto, parity, geth or off" })
		.default("auto"),
	"partition-size": positive("--partition-size", DEFAULT_PARTITION_SIZE),
	"compact-rows": z
		.string()
		.regex(/^[1-9]\d{0,10}$/, "--compact-rows must be a positive integer (rows)")
		.transform(Number)
		.optional(),
	concurrency: positive("--concurrency", DEFAULT_CONCURRENCY),
	"batch-size": positive("--batch-size", 100),
	verbose: z.boolean().default(false),
});

/** Parses backfill flags once (env, then CLI, then defaults); every failure names the flag to fix. */
export function parseBackfillOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): BackfillOptions {
	let values: Record<string, unknown>;
	try {
		({ values } = parseArgs({
			args: argv,
			options: {
				chain: { type: "string" },
				rpc: { type: "string", multiple: true },
				from: { type: "string" },
				to: { type: "string" },
				"data-dir": { type: "string" },
				traces: { type: "string" },
				"partition-size": { type: "string" },
				"compact-rows": { type: "string" },
				concurrency: { type: "string" },
				"batch-size": { type: "string" },
				verbose: { type: "boolean" },
				...LAKE_FLAG_OPTIONS,
			},
			strict: true,
			allowPositionals: false,
		}));
	} catch (err) {
		throw new UserInputError("INVALID_ARGS", `${(err as Error).message}\n${BACKFILL_USAGE}`);
	}
	const envRpc = env.CHAINLAKE_RPC_URLS?.split(",").filter(Boolean);
	const parsed = schema.safeParse({
		...values,
		rpc: values.rpc ?? envRpc ?? [],
		"data-dir": values["data-dir"] ?? env.CHAINLAKE_DATA_DIR,
	});
	if (!parsed.success) {
		const issues = parsed.error.issues.map((i) => i.message).join("; ");
		throw new UserInputError("INVALID_ARGS", `${issues}\n${BACKFILL_USAGE}`);
	}
	const v = parsed.data;
	let lake: Partial<LakeSettings>;
	try {
		lake = lakeFlags(values);
	} catch (err) {
		throw new UserInputError("INVALID_ARGS", `${(err as Error).message}\n${BACKFILL_USAGE}`);
	}
	return {
		lake,
		chain: v.chain,
		rpcUrls: v.rpc,
		from: v.from,
		to: v.to,
		dataDir: v["data-dir"],
		traces: v.traces,
		partitionSize: v["partition-size"],
		compactRows: v["compact-rows"],
		concurrency: v.concurrency,
		batchSize: v["batch-size"],
		verbose: v.verbose,
	};
}
