import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import { folderState } from "../crash/folder.js";
import { REPO_ROOT } from "../helpers/cli.js";

/**
 * Durability, checked on the system calls themselves: the backfill CLI runs under strace, and
 * for every file the manifest comes to list, the trace must show its bytes synced before its
 * rename into place and its folder synced before the manifest naming it is renamed into place;
 * the manifest itself synced before its rename and its folder after. A power loss then cannot
 * leave a manifest naming files whose bytes never reached the disk. The same check on a run with
 * syncing switched off (CHAINLAKE_FSYNC=0) must find the gaps, so the check is not vacuous.
 * Needs strace with ptrace allowed: skipped, with the reason, where it is not.
 */
const CHAIN = "eip155-31337";
const probe = spawnSync("strace", ["-f", "-qq", "-o", "/dev/null", "true"], { encoding: "utf8" });
const SKIP =
	probe.status === 0 ? null : `strace is not usable here: ${(probe.stderr || probe.error?.message || "").trim()}`;
if (SKIP) console.warn(`test/store/fsync.test.ts skipped: ${SKIP}`);

let anvil: AnvilInstance;
let root: string;

beforeAll(async () => {
	if (SKIP) return;
	anvil = await startAnvil({ chainId: 31337 });
	await runWorkload({ rpcUrl: anvil.url });
	root = await mkdtemp(join(tmpdir(), "chainlake-fsync-"));
});
afterAll(async () => {
	await anvil?.stop();
	if (root) await rm(root, { recursive: true, force: true });
});

type Event = { sync: string } | { from: string; to: string };

/** The backfill CLI under strace; returns its syncs and renames in the order they were made. */
const tracedBackfill = (dataDir: string, env: NodeJS.ProcessEnv = {}) =>
	traced(
		[
			"scripts/backfill.ts",
			...["--chain", CHAIN, "--rpc", anvil.url, "--from", "0", "--to", "8", "--data-dir", dataDir],
			...["--partition-size", "3", "--traces", "parity"],
		],
		env,
	);

/** A script (and its arguments) under strace; returns its syncs and renames in the order they were made. */
async function traced(script: string[], env: NodeJS.ProcessEnv = {}): Promise<Event[]> {
	const trace = join(root, `${Math.random().toString(36).slice(2)}.strace`);
	const args = [
		...["-f", "-qq", "-y", "-e", "trace=fsync,fdatasync,rename,renameat,renameat2", "-o", trace],
		...[process.execPath, "--import", "tsx", ...script],
	];
	const child = spawn("strace", args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: "pipe" });
	let stderr = "";
	child.stderr.on("data", (c) => {
		stderr += c;
	});
	child.stdout.resume();
	const code = await new Promise((r) => child.on("close", r));
	expect(code, stderr).toBe(0);
	const events: Event[] = [];
	for (const line of readFileSync(trace, "utf8").split("\n")) {
		// 1234 fsync(23</path/to/file>) = 0   (or "<unfinished ...>": the call began here)
		const sync = /^\d+\s+f(?:data)?sync\(\d+<([^>]*)>/.exec(line);
		if (sync?.[1]) events.push({ sync: sync[1] });
		// 1234 rename("/a", "/b") = 0   or renameat(AT_FDCWD, "/a", AT_FDCWD, "/b"[, 0]) = 0
		const ren = /^\d+\s+rename(?:at2?)?\((?:[^",]+, )?"([^"]+)", (?:[^",]+, )?"([^"]+)"/.exec(line);
		if (ren?.[1] && ren[2] && !line.includes("= -1")) events.push({ from: ren[1], to: ren[2] });
	}
	return events;
}

/** Whether `path` was synced among events [from, to). */
const syncedBetween = (events: Event[], path: string, from: number, to: number) =>
	events.slice(from, to).some((e) => "sync" in e && e.sync === path);

/** What a power loss could lose, by the rules above; [] when every listed file is safe. */
function gaps(events: Event[], chainDir: string): string[] {
	const out: string[] = [];
	const manifest = join(chainDir, "_manifest.json");
	const listed = new Set(folderState(chainDir).listed.map((f) => join(chainDir, f)));
	const manifestRenames = events.flatMap((e, i) => ("to" in e && e.to === manifest ? [i] : []));
	events.forEach((e, i) => {
		// The files the manifest lists, and the manifest (not, say, a backup copy of it).
		if (!("to" in e) || !(listed.has(e.to) || e.to === manifest)) return;
		let previous = i - 1;
		while (
			previous >= 0 &&
			!("from" in (events[previous] as Event) && (events[previous] as { from: string }).from === e.from)
		)
			previous--;
		if (!syncedBetween(events, e.from, previous + 1, i)) out.push(`${e.to}: not synced before its rename`);
		// Its folder must be synced after the rename, before the next manifest is put in place.
		const commit = manifestRenames.find((m) => m > i) ?? events.length;
		const folderSynced =
			e.to === manifest
				? syncedBetween(events, chainDir, i + 1, commit)
				: syncedBetween(events, dirname(e.to), i + 1, commit);
		if (!folderSynced) out.push(`${e.to}: folder not synced after its rename`);
	});
	const renamed = new Set(events.flatMap((e) => ("to" in e ? [e.to] : [])));
	for (const f of listed) if (!renamed.has(f)) out.push(`${f}: listed, but never renamed into place`);
	if (manifestRenames.length === 0) out.push("the manifest was never renamed into place");
	return out;
}

describe("durability", () => {
	it("every listed file and the manifest are synced, with their folders, before the manifest names them", async (ctx) => {
		if (SKIP) return ctx.skip(SKIP);
		const dataDir = join(root, "synced");
		const events = await tracedBackfill(dataDir);
		const chainDir = join(dataDir, CHAIN);
		// 3 chunks: each dataset's and index's file, and 3 manifest saves.
		expect(folderState(chainDir).listed.length).toBeGreaterThan(3 * 7);
		expect(gaps(events, chainDir)).toEqual([]);
	});

	it("the check finds the gaps in a run with syncing off (CHAINLAKE_FSYNC=0)", async (ctx) => {
		if (SKIP) return ctx.skip(SKIP);
		const dataDir = join(root, "unsynced");
		const events = await tracedBackfill(dataDir, { CHAINLAKE_FSYNC: "0" });
		const found = gaps(events, join(dataDir, CHAIN));
		expect(found.filter((g) => g.endsWith("not synced before its rename")).length).toBeGreaterThan(3 * 7);
		expect(found.filter((g) => g.endsWith("folder not synced after its rename")).length).toBeGreaterThan(3 * 7);
	});

	// A revocation lost to a power loss lets the revoked key in again.
	it("npm run keys syncs the key file before its rename and its folder after, and a new folder's parent (create and revoke)", async (ctx) => {
		if (SKIP) return ctx.skip(SKIP);
		const keys = (file: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
			traced(["scripts/keys.ts", ...args, "--keys-file", file], env);
		/**
		 * The key file's writes the rules miss: its bytes before the rename, its folder after, and
		 * for each folder the write made (`made`), its entry in its parent.
		 */
		const keyGaps = (events: Event[], file: string, made: string[] = []) => {
			const at = events.findIndex((e) => "to" in e && e.to === file);
			if (at < 0) return ["never renamed into place"];
			return [
				...(syncedBetween(events, `${file}.tmp`, 0, at) ? [] : ["not synced before its rename"]),
				...(syncedBetween(events, dirname(file), at + 1, events.length) ? [] : ["folder not synced after its rename"]),
				...made
					.filter((d) => !syncedBetween(events, dirname(d), 0, events.length))
					.map((d) => `${d}: entry not synced`),
			];
		};
		// The first key makes the folders keys/a: root gains keys, keys gains a.
		const file = join(root, "keys", "a", "_keys.json");
		const made = [join(root, "keys"), join(root, "keys", "a")];
		expect(keyGaps(await keys(file, ["create", "--name", "first"]), file, made)).toEqual([]);
		const id = (JSON.parse(readFileSync(file, "utf8")) as { id: string }[])[0]?.id as string;
		expect(keyGaps(await keys(file, ["revoke", id]), file)).toEqual([]);
		expect(JSON.parse(readFileSync(file, "utf8"))[0].revoked_at).toBeTruthy();
		// Not vacuous: with syncing off the same check finds every gap, in a new folder.
		const unsynced = join(root, "keys-unsynced", "_keys.json");
		expect(keyGaps(await keys(unsynced, ["create"], { CHAINLAKE_FSYNC: "0" }), unsynced, [dirname(unsynced)])).toEqual([
			"not synced before its rename",
			"folder not synced after its rename",
			`${dirname(unsynced)}: entry not synced`,
		]);
	});
});
