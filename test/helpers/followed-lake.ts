import { readFileSync } from "node:fs";
import { join } from "node:path";
import { mergeDue } from "../../src/store/chunks/merges.js";
import { checkManifestText } from "../../src/store/format/manifest-check.js";
import { headRanksDue } from "../../src/store/holdings/head-ranks.js";
import { ranksDue } from "../../src/store/holdings/holder-ranks.js";
import { metadataDue } from "../../src/store/holdings/token-metadata.js";
import { spawnScript } from "./cli.js";
import { nodeCall } from "./node-rpc.js";

/*
 * A lake kept by `npm run follow` (the real CLI), for the tests that damage and repair one: the
 * follower runs until it has stored the node's head and its background merges are done, then
 * stops as an operator stops it (SIGTERM).
 */

/** The flags the repair tests follow with: small partitions (so merges and runs exist), the 300 ms poll. */
export const FOLLOW_FLAGS = ["--finality-depth", "3", "--poll-ms", "300", "--partition-size", "4"];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The manifest's text, or "" while there is none. */
const manifestText = (dataDir: string, chainId: number) => {
	try {
		return readFileSync(join(dataDir, `eip155-${chainId}`, "_manifest.json"), "utf8");
	} catch {
		return "";
	}
};

/** The highest block the chain folder's manifest lists (-1: none). */
export function storedHead(dataDir: string, chainId: number): number {
	const text = manifestText(dataDir, chainId);
	if (!text) return -1;
	try {
		return Math.max(-1, ...(JSON.parse(text) as { chunks: { to: number }[] }).chunks.map((c) => c.to));
	} catch {
		return -1;
	}
}

/** Whether the manifest's text lists no merge still due (index runs, chunk merges, metadata, ranks, head deltas, head ranks). */
function mergesDone(dataDir: string, text: string, chainId: number): boolean {
	const { manifest: m } = checkManifestText(text, `eip155-${chainId}`);
	return m !== null && !mergeDue(dataDir, m) && !metadataDue(m) && !ranksDue(dataDir, m) && !headRanksDue(dataDir, m);
}

/**
 * Runs `npm run follow` on `dataDir` until `done()` (default: it has stored the node's head, no
 * merge is due any more, and its manifest has not changed for `quietMs`), then stops it with
 * SIGTERM. The same merges done every time: a test's layout does not depend on the machine's load.
 * Returns its exit code and everything it logged.
 */
export async function followUntil(
	dataDir: string,
	rpcUrl: string,
	chainId: number,
	opts: { done?: () => boolean | Promise<boolean>; quietMs?: number; timeoutMs?: number } = {},
): Promise<{ code: number | null; log: string }> {
	const child = spawnScript("follow.ts", [
		...["--follow", `eip155-${chainId}=${rpcUrl}`, "--data-dir", dataDir],
		...FOLLOW_FLAGS,
	]);
	let log = "";
	child.stdout?.on("data", (c) => {
		log += c;
	});
	child.stderr?.on("data", (c) => {
		log += c;
	});
	const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
	const head = Number(await nodeCall(rpcUrl, "eth_blockNumber"));
	const quietMs = opts.quietMs ?? 1500;
	let last = "";
	let since = Date.now();
	const quiet = () => {
		const text = manifestText(dataDir, chainId);
		if (text !== last) [last, since] = [text, Date.now()];
		return storedHead(dataDir, chainId) >= head && Date.now() - since >= quietMs && mergesDone(dataDir, text, chainId);
	};
	const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
	while (Date.now() < deadline && !(await (opts.done ?? quiet)())) await sleep(100);
	child.kill("SIGTERM");
	const code = await exited;
	return { code, log };
}
