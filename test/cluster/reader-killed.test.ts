import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haproxyConfig } from "../../src/cluster/haproxy-config.js";
import { type AnvilInstance, startAnvil } from "../../src/workload/anvil.js";
import { runWorkload } from "../../src/workload/run.js";
import type { WorkloadResult } from "../../src/workload/types.js";
import { backfillInto } from "../helpers/anvil-chain.js";
import { spawnScript } from "../helpers/cli.js";
import { freeBase } from "../helpers/ports.js";

/**
 * Issue 27: killing an API process behind HAProxy turned the requests it was answering into 502s.
 * Two API processes (`npm run serve`) over a backfilled lake behind HAProxy with the recipe's
 * configuration (src/cluster/haproxy-config.ts, as deploy/haproxy.cfg and `npm run cluster`); a
 * load of GETs with 16 keys (both processes busy); one process is SIGKILLed mid-load, the load goes
 * on while HAProxy's checks take it out. Every request must answer 200: the ones in flight on the
 * killed process (connection closed with no answer) and the ones sent to it before its checks
 * failed (connection refused) are retried on the other. HAProxy's own counters show it retried.
 * Opt-in with the other cluster test (`npm run test:cluster`): it needs `haproxy` on the PATH.
 */
const ENABLED = process.env.CHAINLAKE_CLUSTER === "1";
const CHAIN = "eip155-31337";
const KEYS = Array.from({ length: 16 }, (_, i) => `killed-key-${i}`);
let anvil: AnvilInstance;
let workload: WorkloadResult;
let dir: string;
let base: number;
let output = "";
const children: ChildProcess[] = [];
const readers: ChildProcess[] = [];

function start(child: ChildProcess, name: string): ChildProcess {
	for (const s of [child.stdout, child.stderr]) s?.on("data", (c) => (output += `[${name}] ${c}`));
	children.push(child);
	return child;
}
const url = (port: number, path: string) => `http://127.0.0.1:${port}${path}`;
async function until(what: string, ok: () => Promise<boolean>, ms = 60_000) {
	for (const deadline = Date.now() + ms; ; ) {
		if (await ok().catch(() => false)) return;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output:\n${output}`);
		await new Promise((r) => setTimeout(r, 100));
	}
}
/** HAProxy's counters of the readers backend (its stats page as CSV). */
async function backendStats(): Promise<Record<string, string>> {
	const [head = "", ...rows] = (await (await fetch(url(base + 100, "/stats;csv"))).text()).split("\n");
	const names = head.replace(/^# /, "").split(",");
	const row = rows.map((r) => r.split(",")).find((r) => r[0] === "readers" && r[1] === "BACKEND") ?? [];
	return Object.fromEntries(names.map((n, i) => [n, row[i] ?? ""]));
}

beforeAll(async () => {
	if (!ENABLED) return;
	if (spawnSync("haproxy", ["-v"]).error)
		throw new Error("the cluster tests need haproxy on the PATH: apt-get install haproxy");
	anvil = await startAnvil({ chainId: 31337 });
	workload = await runWorkload({ rpcUrl: anvil.url });
	dir = await mkdtemp(join(tmpdir(), "chainlake-reader-killed-"));
	await backfillInto(dir, anvil.url, 31337, { partitionSize: 8 });
	base = await freeBase(2);
	for (const port of [base + 1, base + 2])
		readers.push(
			start(
				spawnScript(
					"serve.ts",
					[...["--data-dir", dir, "--port", String(port), "--rate-limit", "0", "--memory-limit", "256MB"]],
					{ CHAINLAKE_API_KEYS: KEYS.join(",") },
				),
				`reader:${port}`,
			),
		);
	const cfg = join(dir, "haproxy.cfg");
	const readerSetup = [base + 1, base + 2].map((port) => ({ host: "127.0.0.1", port }));
	// The recipe as it is, plus HAProxy's stats page for the test to read its retry counters.
	writeFileSync(
		cfg,
		`${haproxyConfig({ bind: { host: "127.0.0.1", port: base }, readers: readerSetup })}
listen stats
    bind 127.0.0.1:${base + 100}
    stats enable
    stats uri /stats
`,
	);
	start(spawn("haproxy", ["-f", cfg, "-db"], { stdio: ["ignore", "pipe", "pipe"] }), "haproxy");
	await until("both API processes ready", async () => {
		const ready = await Promise.all(readerSetup.map(async (r) => (await fetch(url(r.port, "/readyz"))).status));
		return ready.every((s) => s === 200);
	});
	await until(
		"HAProxy answering",
		async () =>
			(
				await fetch(url(base, `/${CHAIN}/v1/blocks/latest`), {
					headers: { authorization: `Bearer ${KEYS[0]}` },
				})
			).status === 200,
	);
}, 180_000);

afterAll(async () => {
	for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
	await anvil?.stop();
	if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!ENABLED)("HAProxy recipe: an API process killed under load", () => {
	it("answers every GET (in flight on the killed process or sent to it before its checks failed) with 200", async () => {
		const { alice, bob, carol } = workload.accounts;
		const paths = [
			`/${CHAIN}/v1/blocks?block_number_start=0&block_number_end=latest&limit=100`,
			...[alice, bob, carol].flatMap((a) => [
				`/${CHAIN}/v1/address/${a}/transfers?asset_type=native,ft,nft&limit=100`,
				`/${CHAIN}/v1/address/${a}/txs?limit=100`,
			]),
			`/${CHAIN}/v1/contract/${workload.contracts.token20}/transfers?asset_type=ft`,
		];
		const results: { status: number | string; at: number }[] = [];
		let inFlight = 0;
		let running = true;
		const worker = async (w: number) => {
			for (let i = 0; running; i++) {
				const key = KEYS[(w * 5 + i) % KEYS.length] as string;
				inFlight++;
				try {
					const res = await fetch(url(base, paths[(w + i) % paths.length] as string), {
						headers: { authorization: `Bearer ${key}` },
					});
					await res.arrayBuffer();
					results.push({ status: res.status, at: Date.now() });
				} catch (err) {
					results.push({ status: `${(err as Error).message} ${String((err as Error).cause ?? "")}`, at: Date.now() });
				} finally {
					inFlight--;
				}
			}
		};
		const workers = Array.from({ length: 8 }, (_, w) => worker(w));
		await new Promise((r) => setTimeout(r, 1500));
		const before = await backendStats();
		const victim = readers[0] as ChildProcess;
		const killedAt = Date.now();
		const inFlightAtKill = inFlight;
		victim.kill("SIGKILL");
		// On until HAProxy's checks (1 s apart, 2 failures) have taken the process out, and past it.
		await new Promise((r) => setTimeout(r, 4000));
		running = false;
		await Promise.all(workers);
		const after = await backendStats();
		const retried = Number(after.wretr) - Number(before.wretr) + Number(after.wredis) - Number(before.wredis);
		const afterKill = results.filter((r) => r.at >= killedAt);
		console.log(
			`reader killed: ${results.length} requests (${afterKill.length} after the kill, ${inFlightAtKill} in flight at it); HAProxy retries + redispatches ${retried}`,
		);
		expect(victim.signalCode).toBe("SIGKILL");
		expect(afterKill.length).toBeGreaterThan(50);
		expect(inFlightAtKill).toBeGreaterThan(0);
		expect(retried, "HAProxy sent no request again: the kill met none").toBeGreaterThan(0);
		expect(results.filter((r) => r.status !== 200)).toEqual([]);
		// The survivor answers alone now.
		expect(after.status).toBe("UP");
		const down = (await (await fetch(url(base + 100, "/stats;csv"))).text())
			.split("\n")
			.find((l) => l.startsWith(`readers,reader1,`));
		expect(down).toMatch(/,DOWN/);
	}, 120_000);
});
