import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer, type Socket } from "node:net";
import { dirname, join } from "node:path";

export type AnvilOptions = {
	chainId?: number;
	/** Free port picked automatically when omitted. */
	port?: number;
	/** Seconds between blocks; omitted = automine (one block per tx). */
	blockTime?: number;
	/** Extra raw CLI arguments. */
	args?: string[];
	/**
	 * Leave it running on SIGINT/SIGTERM: the caller stops it itself, after what uses it (the
	 * demo stops its follower first). It still dies with this process (exit, watchdog).
	 */
	keepOnSignal?: boolean;
};

export type AnvilInstance = {
	url: string;
	port: number;
	chainId: number;
	/** Stops anvil and resolves once it has exited. Idempotent. */
	stop(): Promise<void>;
};

const require = createRequire(import.meta.url);
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5_000;

/**
 * POSIX watchdog around the binary: anvil dies when our end of the stdin pipe
 * closes, i.e. on stop() or whenever this process dies, even by SIGKILL or
 * from a terminated worker thread, where no 'exit' handler runs. The shell
 * exits only after anvil has, so awaiting the child means the port is free.
 * (fd 3: background jobs of a non-interactive shell get /dev/null as stdin.)
 */
const WATCHDOG = `exec 3<&0
"$0" "$@" </dev/null 3<&- &
pid=$!
(cat <&3 >/dev/null; kill "$pid" 2>/dev/null) &
wait "$pid"`;

/** Hard-kill functions of every anvil that has not exited yet. */
const live = new Set<() => void>();
/** Those of `live` its caller stops itself on a stop signal (AnvilOptions.keepOnSignal). */
const keptOnSignal = new Set<() => void>();
let handlersInstalled = false;

/** Starts anvil from the npm package and resolves once it answers JSON-RPC. */
export async function startAnvil(opts: AnvilOptions = {}): Promise<AnvilInstance> {
	const chainId = opts.chainId ?? 31337;
	// An explicit port must be free: otherwise the readiness probe would be
	// answered by whatever already listens there.
	const port = await freePort(opts.port ?? 0);
	const args = [
		...["--host", "127.0.0.1", "--port", String(port)],
		...["--chain-id", String(chainId), "--silent"],
		...(opts.blockTime === undefined ? [] : ["--block-time", String(opts.blockTime)]),
		...(opts.args ?? []),
	];
	const launch = resolveLaunch(args);
	const child = spawn(launch.command, launch.args, {
		stdio: ["pipe", "ignore", "pipe"],
		// Own process group, so a hard kill reaches the shell and anvil alike.
		detached: launch.watchdog,
	});
	// Unref everything: a forgotten instance must not keep the process alive.
	child.unref();
	for (const s of [child.stdin, child.stderr]) {
		(s as unknown as Socket | null)?.unref();
	}
	let stderr = ""; // tail, for error messages
	child.stderr?.on("data", (chunk: Buffer) => {
		stderr = (stderr + chunk.toString()).slice(-4000);
	});

	const hardKill = () => {
		try {
			if (launch.watchdog && child.pid) process.kill(-child.pid, "SIGKILL");
			// The npm wrapper script forwards SIGTERM to the real binary (and on
			// Windows SIGTERM is a hard kill anyway).
			else child.kill("SIGTERM");
		} catch {
			// already gone
		}
	};
	const exited = new Promise<void>((resolve) => {
		child.once("exit", () => resolve());
		child.once("error", () => resolve());
	});
	installExitHandlers();
	live.add(hardKill);
	if (opts.keepOnSignal) keptOnSignal.add(hardKill);
	void exited.then(() => {
		live.delete(hardKill);
		keptOnSignal.delete(hardKill);
		child.stdin?.destroy(); // lets the watchdog's `cat` finish
	});

	const stop = async (): Promise<void> => {
		if (child.exitCode === null && child.signalCode === null) {
			if (launch.watchdog) child.stdin?.end();
			else child.kill("SIGTERM");
		}
		// This timer also keeps the event loop alive until the exit arrives.
		const timer = setTimeout(hardKill, STOP_TIMEOUT_MS);
		await exited;
		clearTimeout(timer);
	};

	const url = `http://127.0.0.1:${port}`;
	try {
		await waitReady(url, child, () => stderr);
	} catch (err) {
		await stop();
		throw err;
	}
	return { url, port, chainId, stop };
}

type Launch = { command: string; args: string[]; watchdog: boolean };

/** Platform binary from @foundry-rs/anvil-<os>-<arch>, else the JS wrapper. */
function resolveLaunch(args: string[]): Launch {
	const os = { linux: "linux", darwin: "darwin", win32: "win32" }[process.platform as string];
	const arch = { x64: "amd64", arm64: "arm64" }[process.arch as string];
	if (os && arch) {
		try {
			const pkg = `@foundry-rs/anvil-${os}-${arch}/package.json`;
			const dir = dirname(require.resolve(pkg));
			const bin = join(dir, "bin", os === "win32" ? "anvil.exe" : "anvil");
			if (os === "win32" && existsSync(bin)) {
				return { command: bin, args, watchdog: false };
			}
			if (existsSync(bin)) {
				const sh = ["-c", WATCHDOG, bin, ...args];
				return { command: "/bin/sh", args: sh, watchdog: true };
			}
		} catch {
			// platform package missing: fall through to the wrapper
		}
	}
	const wrapper = require.resolve("@foundry-rs/anvil/bin.mjs");
	const nodeArgs = [wrapper, ...args];
	return { command: process.execPath, args: nodeArgs, watchdog: false };
}

/**
 * Returns `port` if it can be bound (0 = let the OS pick one). Small race
 * window until anvil binds it; fine for tests.
 */
function freePort(port: number): Promise<number> {
	return new Promise((resolve, reject) => {
		const srv = createServer();
		srv.unref();
		srv.once("error", reject);
		srv.listen(port, "127.0.0.1", () => {
			const addr = srv.address();
			srv.close(() => {
				if (addr && typeof addr === "object") resolve(addr.port);
				else reject(new Error(`port ${port} is not available`));
			});
		});
	});
}

async function waitReady(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
	let spawnError: Error | undefined;
	child.once("error", (e) => {
		spawnError = e;
	});
	const body = JSON.stringify({
		jsonrpc: "2.0",
		id: 1,
		method: "eth_chainId",
		params: [],
	});
	const deadline = Date.now() + READY_TIMEOUT_MS;
	while (Date.now() < deadline) {
		if (spawnError) {
			throw new Error(`failed to spawn anvil: ${spawnError.message}`);
		}
		if (child.exitCode !== null || child.signalCode !== null) {
			const code = child.exitCode ?? child.signalCode;
			throw new Error(`anvil exited early (${code}): ${stderr()}`);
		}
		try {
			const headers = { "content-type": "application/json" };
			const res = await fetch(url, { method: "POST", headers, body });
			const json = (await res.json()) as { result?: unknown };
			if (typeof json.result === "string") return;
		} catch {
			// not listening yet
		}
		await new Promise((r) => setTimeout(r, 50));
	}
	throw new Error(`anvil did not become ready at ${url}: ${stderr()}`);
}

/**
 * Kills leftover anvils right away when the process exits without stop()
 * ('exit' covers normal exit and process.exit()). On SIGINT/SIGTERM we clean
 * up and, if nobody else handles the signal, re-raise it so the process still
 * dies as it would have.
 */
function installExitHandlers(): void {
	if (handlersInstalled) return;
	handlersInstalled = true;
	const killAll = () => {
		for (const kill of live) kill();
		live.clear();
	};
	process.on("exit", killAll);
	for (const signal of ["SIGINT", "SIGTERM"] as const) {
		const onSignal = () => {
			for (const kill of live) {
				if (keptOnSignal.has(kill)) continue;
				kill();
				live.delete(kill);
			}
			if (process.listenerCount(signal) === 1) {
				process.removeListener(signal, onSignal);
				process.kill(process.pid, signal);
			}
		};
		process.on(signal, onSignal);
	}
}
