import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { spawnScript } from "../helpers/cli.js";
import { deadUrl } from "../helpers/scripted-rpc.js";

/**
 * `npm start` as a newcomer runs it: it starts anvil, the workload, the follower and the API,
 * prints a key and curl commands, and those commands return data; Ctrl-C stops it all.
 */
let dir: string;
afterAll(async () => {
	if (dir) await rm(dir, { recursive: true, force: true });
});

describe("npm start", () => {
	it("serves the demo chain; the printed curl commands return data; SIGINT stops everything", async () => {
		dir = await mkdtemp(join(tmpdir(), "chainlake-start-"));
		const port = new URL(await deadUrl()).port;
		const child = spawnScript("start.ts", [], {
			PORT: port,
			CHAINLAKE_DEMO_DIR: dir,
			CHAINLAKE_DEMO_INTERVAL_MS: "300",
		});
		let out = "";
		child.stdout?.on("data", (c) => {
			out += c;
		});
		const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
		const started = Date.now();
		while (!out.includes("Ctrl-C stops everything.") && Date.now() - started < 100_000) {
			await new Promise((r) => setTimeout(r, 100));
		}
		expect(out).toContain("Ctrl-C stops everything.");
		expect(out).toMatch(/API key: +demo-[0-9a-f]{24}/);
		expect(out).toContain(`http://127.0.0.1:${port}/docs`);

		const curls = [...out.matchAll(/curl -s -H "Authorization: Bearer ([^"]+)" "([^"]+)"/g)];
		expect(curls).toHaveLength(3);
		for (const [, key, url] of curls) {
			const res = await fetch(url as string, { headers: { authorization: `Bearer ${key}` } });
			expect(res.status, url).toBe(200);
			const body = (await res.json()) as { items?: unknown[]; number?: number };
			if (body.items) expect(body.items.length, url).toBeGreaterThan(0);
			else expect(body.number, url).toBeGreaterThan(0);
		}

		// The chain keeps moving and the follower keeps up.
		const latest = async () =>
			(
				(await (
					await fetch(curls[0]?.[2] as string, { headers: { authorization: `Bearer ${curls[0]?.[1]}` } })
				).json()) as {
					number: number;
				}
			).number;
		const first = await latest();
		const deadline = Date.now() + 20_000;
		while ((await latest()) <= first && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
		expect(await latest()).toBeGreaterThan(first);

		child.kill("SIGINT");
		expect(await exited).toBe(0);
		await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
	});
});
