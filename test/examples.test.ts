/**
 * The notebook examples of examples/ run against a served anvil chain (a real socket, the SQL
 * endpoint on) and print what the API's JSON answers say: the wallet's transfer count, the
 * column types, and what it received per token standard. The Python one needs pandas
 * (python3-pandas; .ci/run installs it): without it, that test is skipped and says why.
 */
import { spawn, spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiFixture, AUTH, startApiOnWorkload, TEST_KEY } from "./helpers/api.js";
import { REPO_ROOT, runScript } from "./helpers/cli.js";

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
	f = await startApiOnWorkload({ app: { sql: { enabled: true } } });
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
