import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/**
 * Where the system's ephemeral ports begin (Linux's ip_local_port_range; 49152, the IANA range
 * macOS and Windows use, elsewhere). A port picked inside that range can be handed to any outgoing
 * connection, or to an anvil started on port 0, between our check and the bind of the process we
 * start (seen here: a reader refused "port 39630 is taken" in test:cluster).
 */
function ephemeralStart(): number {
	try {
		const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
		if (Number.isInteger(low) && low > 12_000) return low;
	} catch {
		// not Linux
	}
	return 49_152;
}

/**
 * A port with `span` free ports after it and one at +100 (the cluster tests: HAProxy, the API
 * processes, and the writer's status port or HAProxy's stats), all below the ephemeral ports.
 */
export async function freeBase(span: number): Promise<number> {
	const free = (port: number) =>
		new Promise<boolean>((resolve) => {
			const s = createServer();
			s.once("error", () => resolve(false));
			s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
		});
	const room = ephemeralStart() - 10_000 - Math.max(span, 100) - 1;
	for (;;) {
		const p = 10_000 + Math.floor(Math.random() * room);
		const ports = [...Array.from({ length: span + 1 }, (_, i) => p + i), p + 100];
		if ((await Promise.all(ports.map(free))).every(Boolean)) return p;
	}
}
