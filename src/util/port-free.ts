import { createServer } from "node:net";

/**
 * Fails as the service's own listen would (EADDRINUSE, EADDRNOTAVAIL, EACCES: util/cli.ts says
 * what to do) unless `port` on `host` can be listened on now: a command that builds for a while
 * before it listens (npm start's demo chain, about 20 s; a follower started by serve) checks first,
 * rather than failing once that work is done. The port is let go at once; the real listen later
 * still fails the same way if another process took it meanwhile. Port 0 is always free.
 */
export async function checkPortFree(port: number, host: string): Promise<void> {
	if (port === 0) return;
	const probe = createServer();
	await new Promise<void>((resolve, reject) => {
		probe.once("error", reject);
		probe.listen({ port, host, exclusive: true }, () => resolve());
	});
	await new Promise<void>((resolve) => probe.close(() => resolve()));
}
