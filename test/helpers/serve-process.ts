import type { ChildProcess } from "node:child_process";
import { spawnScript } from "./cli.js";

/** A `serve` process of scripts/ (a reader, or `--follow` a writer): its base URL once it listens. */
export interface ServeProcess {
	base: string;
	child: ChildProcess;
	/** Its stdout and stderr so far (for a failure's message). */
	output(): string;
	/** SIGTERM, then resolves once it has exited. */
	stop(): Promise<void>;
}

export function startServe(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
	const child = spawnScript("serve.ts", ["--port", "0", "--rate-limit", "0", ...args], env);
	let out = "";
	const stop = () =>
		child.exitCode !== null || child.signalCode !== null
			? Promise.resolve()
			: new Promise<void>((r) => child.once("exit", () => r()).kill("SIGTERM"));
	return new Promise((resolve, reject) => {
		const take = (c: Buffer) => {
			out += c;
			const m = /chainlake API on (http:\/\/[^\s:]+:\d+)/.exec(out);
			if (m?.[1]) resolve({ base: m[1], child, output: () => out, stop });
		};
		child.stdout?.on("data", take);
		child.stderr?.on("data", take);
		child.on("exit", (code, signal) => reject(new Error(`serve exited with ${code ?? signal}: ${out}`)));
	});
}

/** Every item a list route answers now for `path?query`, page after page. */
export async function listedItems(url: string, headers: Record<string, string>): Promise<Record<string, unknown>[]> {
	const items: Record<string, unknown>[] = [];
	for (let offset = ""; ; ) {
		const res = await fetch(`${url}&limit=1000${offset ? `&offset=${offset}` : ""}`, { headers });
		const body = (await res.json()) as {
			items?: Record<string, unknown>[];
			range: { has_more: boolean; next_offset: string };
		};
		if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
		items.push(...(body.items ?? []));
		if (!body.range.has_more) return items;
		offset = body.range.next_offset;
	}
}
