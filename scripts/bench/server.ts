import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";

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

export async function startService(dataDir: string, port: number, key: string): Promise<ServiceProcess> {
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
		],
		{ env: { ...process.env, CHAINLAKE_API_KEYS: key }, stdio: ["ignore", "ignore", "pipe"] },
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
