import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";

/*
 * Headless Chromium driven through its DevTools protocol over a pipe (--remote-debugging-pipe:
 * JSON messages ended by a NUL byte, ours on fd 3, its on fd 4). No browser library and no
 * browser download: the Debian package's binary, and a few protocol calls.
 */

export const CHROMIUM = process.env.CHAINLAKE_CHROMIUM ?? "/usr/bin/chromium";

/** The test needs a browser: without one it fails, saying how to get it, rather than skip. */
export function requireChromium() {
	if (!existsSync(CHROMIUM)) {
		throw new Error(
			`no Chromium at ${CHROMIUM}: install Debian's (sudo apt-get install -y chromium; .ci/run does), or set CHAINLAKE_CHROMIUM to a Chromium or Chrome binary`,
		);
	}
}

export interface CdpEvent {
	method: string;
	// biome-ignore lint/suspicious/noExplicitAny: protocol payloads, read field by field by the tests
	params: any;
	sessionId?: string;
}

export interface Chromium {
	// biome-ignore lint/suspicious/noExplicitAny: protocol results, read field by field by the tests
	send(method: string, params?: object, sessionId?: string): Promise<any>;
	onEvent(listener: (event: CdpEvent) => void): void;
	close(): Promise<void>;
}

export async function launchChromium(): Promise<Chromium> {
	requireChromium();
	const profile = await mkdtemp(join(tmpdir(), "chainlake-chromium-"));
	const child: ChildProcess = spawn(
		CHROMIUM,
		[
			"--headless",
			// Root in a container has no user namespace to sandbox the renderers in.
			"--no-sandbox",
			"--disable-gpu",
			"--disable-dev-shm-usage",
			"--no-first-run",
			"--no-default-browser-check",
			"--disable-extensions",
			"--remote-debugging-pipe",
			`--user-data-dir=${profile}`,
			"about:blank",
		],
		{ stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
	);
	// The last of its stderr, to say why it died.
	let stderr = "";
	child.stderr?.on("data", (d: Buffer) => {
		stderr = (stderr + d.toString()).slice(-4000);
	});
	const toBrowser = child.stdio[3] as Writable;
	const fromBrowser = child.stdio[4] as Readable;
	const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; method: string }>();
	const listeners: ((event: CdpEvent) => void)[] = [];
	let nextId = 1;
	let buffered = "";
	let exited: Error | null = null;

	fromBrowser.on("data", (chunk: Buffer) => {
		buffered += chunk.toString();
		for (let end = buffered.indexOf("\0"); end >= 0; end = buffered.indexOf("\0")) {
			const message = JSON.parse(buffered.slice(0, end));
			buffered = buffered.slice(end + 1);
			if (message.id !== undefined) {
				const call = pending.get(message.id);
				pending.delete(message.id);
				if (message.error) call?.reject(new Error(`${call.method}: ${message.error.message}`));
				else call?.resolve(message.result);
			} else {
				for (const l of listeners) l(message as CdpEvent);
			}
		}
	});
	child.on("exit", (code, signal) => {
		exited = new Error(`chromium exited (${code ?? signal}); its stderr ended with:\n${stderr}`);
		for (const call of pending.values()) call.reject(exited);
		pending.clear();
	});

	return {
		send(method, params = {}, sessionId) {
			if (exited) return Promise.reject(exited);
			const id = nextId++;
			return new Promise((resolve, reject) => {
				pending.set(id, { resolve, reject, method });
				toBrowser.write(`${JSON.stringify({ id, method, params, sessionId })}\0`);
			});
		},
		onEvent(listener) {
			listeners.push(listener);
		},
		async close() {
			if (!exited) {
				const gone = new Promise((resolve) => child.once("exit", resolve));
				child.kill("SIGTERM");
				await gone;
			}
			// Chromium's helper processes can still be writing into the profile as the main one exits
			// (seen: ENOTEMPTY): retried, as Node's rm does for that error.
			await rm(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
		},
	};
}

/** A new tab, attached, with the domains the tests watch enabled; events arrive with its sessionId. */
export async function openTab(browser: Chromium, width = 1400, height = 1000) {
	const { targetId } = await browser.send("Target.createTarget", { url: "about:blank" });
	const { sessionId } = await browser.send("Target.attachToTarget", { targetId, flatten: true });
	const send = (method: string, params: object = {}) => browser.send(method, params, sessionId);
	for (const domain of ["Page", "Runtime", "Log", "Network"]) await send(`${domain}.enable`);
	await send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: false });
	return {
		sessionId,
		send,
		/** The value of a page expression (awaited when it is a promise). */
		async evaluate<T>(expression: string): Promise<T> {
			const r = await send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
			if (r.exceptionDetails) throw new Error(`page threw: ${r.exceptionDetails.exception?.description}`);
			return r.result.value as T;
		},
		/** Polls `expression` until it is truthy; fails naming it after `timeoutMs` (generous: CI runs two test files at once on 2 cores). */
		async waitUntil(expression: string, timeoutMs = 60_000) {
			const deadline = Date.now() + timeoutMs;
			for (;;) {
				if (await this.evaluate<boolean>(`Boolean(${expression})`)) return;
				if (Date.now() > deadline) throw new Error(`the page did not get to ${expression} in ${timeoutMs} ms`);
				await new Promise((r) => setTimeout(r, 100));
			}
		},
		/** A PNG of the page from its top, beyond the viewport, at most `maxHeight` pixels high. */
		async screenshot(maxHeight = 6000): Promise<Buffer> {
			const { cssContentSize } = await send("Page.getLayoutMetrics");
			const clip = { x: 0, y: 0, width, height: Math.min(cssContentSize.height, maxHeight), scale: 1 };
			const { data } = await send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true, clip });
			return Buffer.from(data, "base64");
		},
	};
}
