import { createServer } from "node:net";

/**
 * A port with `span` free ports after it and one at +100 (the cluster tests: HAProxy, the API
 * processes, and the writer's status port or HAProxy's stats).
 */
export async function freeBase(span: number): Promise<number> {
	const free = (port: number) =>
		new Promise<boolean>((resolve) => {
			const s = createServer();
			s.once("error", () => resolve(false));
			s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
		});
	for (;;) {
		const p = 20_000 + Math.floor(Math.random() * 30_000);
		const ports = [...Array.from({ length: span + 1 }, (_, i) => p + i), p + 100];
		if ((await Promise.all(ports.map(free))).every(Boolean)) return p;
	}
}
