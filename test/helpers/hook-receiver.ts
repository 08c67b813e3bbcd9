import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/*
 * A webhook receiver for the tests: a real HTTP server on loopback that checks every delivery's
 * signature (computed here with node:crypto, not with the service's code), applies the events as
 * a consumer must (an item is kept by id; a reorg to block n drops every item above n), and
 * records what it saw. `failing` makes it answer 500 without applying anything.
 */

export interface ReceivedEvent {
	type: "item" | "reorg";
	id: string;
	block_number: number;
	block_hash?: string;
	item?: Record<string, unknown>;
}

export interface HookReceiver {
	url: string;
	/** Items held now, by their id (the list item's). */
	items: Map<string, Record<string, unknown>>;
	/** Every acknowledged event, in the order applied. */
	applied: ReceivedEvent[];
	/** Bodies answered 500 while failing (a retry sends the same body). */
	refusedBodies: string[];
	/** Requests with a missing or wrong signature (answered 401). */
	badSignatures: number;
	/** Items that came out of order or twice (an id not above the last one held). */
	outOfOrder: string[];
	/** Requests to /redirect, answered 302 to /elsewhere; and requests that reached /elsewhere. */
	redirects: number;
	elsewhere: number;
	failing: boolean;
	/** Item ids of each acknowledged batch, in the order they came. */
	batches: string[][];
	/** Wait this long after applying a batch before answering (a crash then leaves it unacknowledged). */
	delayMs: number;
	/** Deliveries at /in being answered now, and the most at once (one hook's come one at a time). */
	inFlight: number;
	maxInFlight: number;
	/** Take a re-sent item (after a crash: the unacknowledged batch comes again) without counting it out of order. */
	allowDuplicates: boolean;
	close(): Promise<void>;
}

export async function startHookReceiver(secret: string): Promise<HookReceiver> {
	const r: Omit<HookReceiver, "url" | "close"> = {
		items: new Map(),
		applied: [],
		refusedBodies: [],
		badSignatures: 0,
		outOfOrder: [],
		redirects: 0,
		elsewhere: 0,
		failing: false,
		allowDuplicates: false,
		batches: [],
		delayMs: 0,
		inFlight: 0,
		maxInFlight: 0,
	};
	let lastId = "";
	const server: Server = createServer((req, res) => {
		if (req.url === "/in") {
			r.inFlight++;
			r.maxInFlight = Math.max(r.maxInFlight, r.inFlight);
			res.on("close", () => {
				r.inFlight--;
			});
		}
		const chunks: Buffer[] = [];
		req.on("data", (c: Buffer) => chunks.push(c));
		req.on("end", () => {
			if (req.url === "/redirect") {
				r.redirects++;
				return res.writeHead(302, { location: "/elsewhere" }).end();
			}
			if (req.url?.startsWith("/ignore")) return res.writeHead(204).end();
			if (req.url === "/elsewhere") {
				r.elsewhere++;
				return res.writeHead(204).end();
			}
			const body = Buffer.concat(chunks).toString("utf8");
			const ts = String(req.headers["x-chainlake-timestamp"] ?? "");
			const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(`${ts}.${body}`).digest("hex")}`);
			const given = Buffer.from(String(req.headers["x-chainlake-signature"] ?? ""));
			if (
				given.length !== expected.length ||
				!timingSafeEqual(given, expected) ||
				Math.abs(Date.now() / 1000 - Number(ts)) > 300
			) {
				r.badSignatures++;
				return res.writeHead(401).end();
			}
			if (r.failing) {
				r.refusedBodies.push(body);
				return res.writeHead(500).end("down for a while");
			}
			const batch = JSON.parse(body) as { events: ReceivedEvent[]; cursor: string };
			r.batches.push(batch.events.flatMap((e) => (e.type === "item" ? [String(e.item?.id)] : [])));
			for (const e of batch.events) {
				r.applied.push(e);
				if (e.type === "reorg") {
					for (const [id, item] of r.items) if (Number(item.block_number) > e.block_number) r.items.delete(id);
					lastId = [...r.items.keys()].sort().at(-1) ?? "";
					continue;
				}
				// e.id is the feed's cursor (opaque); the item's own id orders items in chain order.
				const id = String(e.item?.id);
				if (id <= lastId && !(r.allowDuplicates && r.items.has(id))) r.outOfOrder.push(id);
				r.items.set(id, e.item as Record<string, unknown>);
				if (id > lastId) lastId = id;
			}
			if (r.delayMs > 0) setTimeout(() => res.writeHead(204).end(), r.delayMs);
			else res.writeHead(204).end();
		});
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	return Object.assign(r, {
		url: `http://127.0.0.1:${port}/in`,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	}) as HookReceiver;
}
