import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/**
 * The service as users run it: `scripts/serve.ts` in its own Node process (so its memory is
 * its own and the load generator does not share its event loop), rate limits off.
 */
export interface ServiceProcess {
	base: string;
	pid: number;
	/** Peak resident memory so far (VmHWM), bytes. */
	peakRss(): number;
	stop(): Promise<void>;
}

/** Fails unless nothing listens on `port` (so what answers there later is ours). */
export async function assertPortFree(port: number, what: string): Promise<void> {
	const taken = await new Promise<boolean>((resolve) => {
		const probe = createServer();
		probe.once("error", () => resolve(true));
		probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(false)));
	});
	if (taken) throw new Error(`port ${port} (${what}) is taken by another process: pass another --port`);
}

/** `more`: flags after the ones here (e.g. `--follow`), and further API keys beside `key`. */
export async function startService(
	dataDir: string,
	port: number,
	key: string,
	more: { args?: string[]; keys?: string[] } = {},
): Promise<ServiceProcess> {
	await assertPortFree(port, "the service");
	const child: ChildProcess = spawn(
		process.execPath,
		// The heap cap of `npm run serve` (package.json): see README's "Memory".
		[
			"--max-old-space-size=512",
			"--import",
			"tsx",
			"scripts/serve.ts",
			"--data-dir",
			dataDir,
			"--port",
			String(port),
			"--rate-limit",
			"0",
			...(more.args ?? []),
		],
		{
			env: { ...process.env, CHAINLAKE_API_KEYS: [key, ...(more.keys ?? [])].join(",") },
			stdio: ["ignore", "ignore", "pipe"],
		},
	);
	let stderr = "";
	child.stderr?.on("data", (d) => {
		stderr = (stderr + String(d)).slice(-4000);
	});
	const base = `http://127.0.0.1:${port}`;
	for (let i = 0; ; i++) {
		if (child.exitCode != null) throw new Error(`service exited: ${stderr}`);
		try {
			if ((await fetch(`${base}/healthz`)).ok) break;
		} catch {}
		if (i > 300) throw new Error(`service did not start: ${stderr}`);
		await new Promise((r) => setTimeout(r, 100));
	}
	// Ours takes our key: a server of another process (one that took the port meanwhile) would not.
	const own = await fetch(`${base}/openapi.json`);
	const chains = await fetch(`${base}/eip155-1/v1/blocks/latest`, { headers: { authorization: `Bearer ${key}` } });
	if (!own.ok || chains.status === 401 || child.exitCode != null) {
		child.kill("SIGTERM");
		throw new Error(`the server on port ${port} is not the one this bench started (status ${chains.status})`);
	}
	const pid = child.pid as number;
	return {
		base,
		pid,
		peakRss() {
			const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
			return Number(m?.[1] ?? 0) * 1024;
		},
		async stop() {
			child.kill("SIGTERM");
			await new Promise((r) => child.once("exit", r));
		},
	};
}
