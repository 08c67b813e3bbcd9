/**
 * The notebook examples of examples/ run against a served anvil chain (a real socket, the SQL
 * endpoint on) and print what the API's JSON answers say: the wallet's transfer count, the
 * column types, and what it received per token standard. The Python one needs pandas
 * (python3-pandas; .ci/run installs it): without it, that test is skipped and says why. The
 * webhook receivers and the stream consumers (curl, Node, Python) run against the same chain;
 * the stream consumers through a proxy that drops their first connection mid-stream.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { type AddressInfo, connect, createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllowHosts } from "../src/api/hooks/destinations.js";
import { type HookDelivery, startHookDelivery } from "../src/api/hooks/hook-delivery.js";
import { DEFAULT_DELIVERY } from "../src/api/hooks/hook-worker.js";
import { createMemoryLogger } from "../src/util/logger.js";
import { type ApiFixture, AUTH, startApiOnWorkload, TEST_KEY } from "./helpers/api.js";
import { REPO_ROOT, runScript } from "./helpers/cli.js";
import { appliedItems, parseSse } from "./helpers/sse.js";

let f: ApiFixture;
let base: string;
let address: string;
/** What the JSON routes say: the wallet's transfers, and per standard what it received. */
let expected: { transfers: number; received: Map<string, number> };

/** A Python with pandas: the one on PATH, or Debian's (a pyenv shim may come first on PATH). */
const python = ["python3", "/usr/bin/python3"]
	.map((p) => spawnSync(p, ["-c", "import sys, pandas; print(sys.executable)"], { encoding: "utf8" }))
	.find((r) => r.status === 0)
	?.stdout.trim();

beforeAll(async () => {
	f = await startApiOnWorkload({ app: { sql: { enabled: true }, hookPolicy: parseAllowHosts("127.0.0.1") } });
	base = await f.app.listen({ port: 0, host: "127.0.0.1" });
	address = f.work.accounts.alice.toLowerCase();
	const items: Record<string, unknown>[] = [];
	let offset = "";
	for (;;) {
		const page = await f.get(
			`/${f.chain}/v1/address/${address}/transfers?asset_type=native,ft,nft&limit=1000${offset ? `&offset=${offset}` : ""}`,
			AUTH,
		);
		items.push(...(page.body.items ?? []));
		const range = page.body.range as { has_more: boolean; next_offset: string | null };
		if (!range.has_more) break;
		offset = range.next_offset ?? "";
	}
	const received = new Map<string, number>();
	for (const t of items)
		if (t.recipient === address)
			received.set(String(t.token_standard), (received.get(String(t.token_standard)) ?? 0) + 1);
	expected = { transfers: items.length, received };
	expect(items.length).toBeGreaterThan(0);
	expect(received.size).toBeGreaterThan(1);
}, 120_000);
afterAll(async () => {
	await delivery?.stop();
	for (const c of receivers) c.kill("SIGTERM");
	await f?.close();
});

/** The lines an example prints for what it read. */
function check(stdout: string, types: RegExp) {
	expect(stdout).toContain(`transfers: ${expected.transfers} rows`);
	expect(stdout).toMatch(types);
	for (const [standard, n] of expected.received) expect(stdout).toContain(`received ${standard}: ${n} transfers`);
}

describe("examples/", () => {
	it("wallet-transfers.ts: Arrow pages with their types, then a SQL aggregate", async () => {
		const r = await runScript("../examples/wallet-transfers.ts", [
			...["--url", base, "--key", TEST_KEY, "--chain", f.chain, "--address", address],
		]);
		expect(r.code, r.stderr).toBe(0);
		check(r.stdout, /types: block_number Int64, value Utf8, asset_type Utf8/);
	});

	it.skipIf(!python)(
		"wallet_transfers.py: pandas over CSV pages, then SQL as NDJSON (needs python3-pandas)",
		async () => {
			// Not spawnSync: the API answering the script runs in this process.
			const child = spawn(
				python as string,
				["examples/wallet_transfers.py", "--url", base, "--key", TEST_KEY, "--chain", f.chain, "--address", address],
				{ cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] },
			);
			let stdout = "";
			let stderr = "";
			child.stdout.on("data", (c) => {
				stdout += c;
			});
			child.stderr.on("data", (c) => {
				stderr += c;
			});
			const code = await new Promise((resolve) => child.on("close", resolve));
			expect(code, stderr).toBe(0);
			check(stdout, /types: block_number int64, value object/);
		},
	);
});

let delivery: HookDelivery | undefined;
const receivers: ChildProcess[] = [];

/** Starts a receiver of examples/ on a free port; its output so far, and its URL once it listens. */
function startReceiver(command: string, args: string[]) {
	const child = spawn(command, args, { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
	receivers.push(child);
	const out = { text: "", err: "" };
	child.stdout.on("data", (c) => {
		out.text += c;
	});
	child.stderr.on("data", (c) => {
		out.err += c;
	});
	const url = new Promise<string>((resolve, reject) => {
		child.stdout.on("data", () => {
			const m = /listening on (\d+)/.exec(out.text);
			if (m) resolve(`http://127.0.0.1:${m[1]}/hooks`);
		});
		child.on("exit", (code) => reject(new Error(`receiver exited with ${code}: ${out.err}`)));
	});
	return { out, url };
}

describe("examples/ webhooks: hook-create.sh, then a receiver that checks signatures", () => {
	const secret = "example-secret-0123456789";
	/** What the hook of hook-create.sh must deliver: the wallet's native and ERC-20 transfers 2 blocks deep. */
	const expectedIds = async () => {
		const r = await f.get(
			`/${f.chain}/v1/address/${address}/transfers?asset_type=native,ft&block_number_start=0&block_number_end=-2&limit=1000`,
		);
		return (r.body.items ?? []).map((t) => String(t.id));
	};

	beforeAll(() => {
		// The served folder's hooks, delivered by this process (as serve does); every owner valid here.
		delivery = startHookDelivery(f.app, {
			...DEFAULT_DELIVERY,
			policy: parseAllowHosts("127.0.0.1"),
			dataDir: f.dataDir,
			chains: () => f.store.chains(),
			ownerValid: () => true,
			pollMs: 100,
			log: createMemoryLogger(),
		});
	});

	it.each([
		["hook-receiver.mjs (Node)", process.execPath, ["examples/hook-receiver.mjs"]],
		["hook_receiver.py (Python, standard library only)", "python3", ["examples/hook_receiver.py"]],
	])("%s gets every item, and refuses a forged delivery", async (_name, command, script) => {
		const { out, url } = startReceiver(command, [...script, "--port", "0", "--secret", secret]);
		const receiver = await url;
		// Not spawnSync: the API answering curl runs in this process.
		const curl = spawn("sh", ["examples/hook-create.sh"], {
			cwd: REPO_ROOT,
			env: {
				...process.env,
				BASE: base,
				KEY: TEST_KEY,
				CHAIN: f.chain,
				WALLET: address,
				RECEIVER: receiver,
				SECRET: secret,
			},
		});
		const made = { stdout: "", stderr: "", status: null as number | null };
		curl.stdout.on("data", (c) => {
			made.stdout += c;
		});
		curl.stderr.on("data", (c) => {
			made.stderr += c;
		});
		made.status = await new Promise((resolve) => curl.on("close", resolve));
		expect(made.status, made.stdout + made.stderr).toBe(0);
		expect(JSON.parse(made.stdout)).toMatchObject({ url: receiver, confirmations: 2 });
		const want = await expectedIds();
		expect(want.length).toBeGreaterThan(0);
		const got = () => [...out.text.matchAll(/^item (\S+) block \d+$/gm)].map((m) => m[1]);
		for (let i = 0; i < 200 && got().length < want.length; i++) await new Promise((r) => setTimeout(r, 50));
		expect(got()).toEqual(want);
		const forged = await fetch(receiver, {
			method: "POST",
			headers: { "x-chainlake-timestamp": String(Math.floor(Date.now() / 1000)), "x-chainlake-signature": "sha256=00" },
			body: "{}",
		});
		expect(forged.status).toBe(401);
		// Its line may reach this process just after the answer.
		for (let i = 0; i < 40 && !out.text.includes("refused"); i++) await new Promise((r) => setTimeout(r, 50));
		expect(out.text).toContain("refused: bad signature");
	});
});

/** Every item id of the wallet's transfers from block 0 to `end`, as the JSON list route answers them. */
async function listedIds(assets: string, end: number): Promise<string[]> {
	const ids: string[] = [];
	for (let offset = ""; ; ) {
		const page = await f.get(
			`/${f.chain}/v1/address/${address}/transfers?asset_type=${assets}&block_number_start=0&block_number_end=${end}&limit=1000${offset ? `&offset=${offset}` : ""}`,
			AUTH,
		);
		ids.push(...(page.body.items ?? []).map((t) => String(t.id)));
		const range = page.body.range as { has_more: boolean; next_offset: string };
		if (!range.has_more) return ids;
		offset = range.next_offset;
	}
}

/**
 * A TCP proxy in front of the API that cuts its first connection after `bytes` of the answer (a
 * dropped stream, mid-event), and passes the ones after it whole: the consumer must resume.
 */
async function cuttingProxy(target: string, bytes: number) {
	const { port, hostname } = new URL(target);
	let connections = 0;
	const server = createServer((client) => {
		const first = connections++ === 0;
		const upstream = connect(Number(port), hostname);
		client.pipe(upstream);
		let sent = 0;
		upstream.on("data", (c: Buffer) => {
			if (first && sent + c.length >= bytes) {
				client.end(c.subarray(0, bytes - sent));
				upstream.destroy();
				client.destroy();
				return;
			}
			sent += c.length;
			client.write(c);
		});
		upstream.on("end", () => client.end());
		for (const s of [client, upstream]) s.on("error", () => {});
	});
	await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
	return {
		url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		connections: () => connections,
		close: () => new Promise((r) => server.close(r)),
	};
}

/** Runs a command of examples/ to its end (not spawnSync: the API it asks runs in this process). */
function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}) {
	const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env } });
	const out = { stdout: "", stderr: "", code: null as number | null };
	child.stdout.on("data", (c) => {
		out.stdout += c;
	});
	child.stderr.on("data", (c) => {
		out.stderr += c;
	});
	return new Promise<typeof out>((resolve) =>
		child.on("close", (code) => {
			out.code = code;
			resolve(out);
		}),
	);
}

describe("examples/ streams: curl, and consumers that resume after a dropped connection", () => {
	let head: number;
	beforeAll(async () => {
		head = Number((await f.get(`/${f.chain}/v1/blocks/latest`, AUTH)).body.number);
	});

	it("stream-curl.sh prints the events whose items are the list route's", async () => {
		const r = await run("sh", ["examples/stream-curl.sh"], {
			BASE: base,
			KEY: TEST_KEY,
			CHAIN: f.chain,
			WALLET: address,
			END: String(head),
		});
		expect(r.code, r.stderr).toBe(0);
		const { events } = parseSse(r.stdout);
		expect(events.at(-1)?.event).toBe("end");
		const want = await listedIds("native,ft", head);
		expect(want.length).toBeGreaterThan(0);
		expect(appliedItems(events).map((t) => String(t.id))).toEqual(want);
	});

	it.each([
		["stream-consumer.mjs (Node)", process.execPath, ["examples/stream-consumer.mjs"]],
		["stream_consumer.py (Python, standard library only)", "python3", ["examples/stream_consumer.py"]],
	])("%s resumes with Last-Event-ID and holds exactly the list route's items", async (_name, command, script) => {
		const proxy = await cuttingProxy(base, 3000);
		try {
			const r = await run(command, [
				...script,
				...["--url", proxy.url, "--key", TEST_KEY, "--chain", f.chain, "--address", address, "--end", String(head)],
			]);
			expect(r.code, r.stderr).toBe(0);
			// Cut after some items: it resumed after one of them, on a second connection.
			expect(r.stderr).toMatch(/stream cut: resuming after [A-Za-z0-9_-]{20,}/);
			expect(proxy.connections()).toBe(2);
			const held = [...r.stdout.matchAll(/^holding (\S+) block \d+$/gm)].map((m) => m[1]);
			const want = await listedIds("native,ft,nft", head);
			expect(want.length).toBeGreaterThan(10);
			expect(held).toEqual(want);
		} finally {
			await proxy.close();
		}
	});
});
