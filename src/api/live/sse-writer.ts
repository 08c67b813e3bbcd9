import type { Writable } from "node:stream";
import { stringifyExact } from "../answers/records.js";
import { errorBody } from "../errors.js";
import type { FeedEvent } from "./feed.js";

/*
 * A feed's events as Server-Sent Events on a response, never buffered without bound: a reader
 * that leaves more than `bufferBytes` unread for `slowReaderMs` is sent a last `error` event
 * (SLOW_READER) and dropped.
 */

/** One SSE event's text (data is one line: the JSON writers here never write a newline). */
export function sseEvent(event: string, data: string, id?: string): string {
	return `event: ${event}\n${id ? `id: ${id}\n` : ""}data: ${data}\n\n`;
}

function eventText(ev: FeedEvent): string {
	switch (ev.type) {
		case "item":
			return sseEvent("item", ev.text, ev.id);
		case "reorg":
			return sseEvent("reorg", stringifyExact({ block_number: ev.block_number, block_hash: ev.block_hash }), ev.id);
		case "head":
			return sseEvent(
				"head",
				stringifyExact({
					block_number: ev.block_number,
					block_hash: ev.block_hash,
					scanned_through: ev.scanned_through,
				}),
			);
		case "end":
			return sseEvent("end", stringifyExact({ reason: ev.reason }));
	}
}

/**
 * Writes `events` to `res` until they end, `signal` aborts, or the reader is too slow; says which.
 * An error of the feed is thrown to the caller (which tells it in an `error` event).
 */
export async function writeEvents(
	events: AsyncIterable<FeedEvent>,
	res: Writable,
	opts: { bufferBytes: number; slowReaderMs: number },
	signal: AbortSignal,
): Promise<"done" | "gone" | "slow"> {
	for await (const ev of events) {
		if (signal.aborted) return "gone";
		res.write(eventText(ev));
		if (res.writableLength <= opts.bufferBytes) continue;
		if (await unread(res, opts.bufferBytes, opts.slowReaderMs, signal)) continue;
		if (signal.aborted) return "gone";
		const message = `this stream's reader left more than ${Math.round(opts.bufferBytes / 1024)} KiB unread for ${opts.slowReaderMs / 1000} s: reconnect with the last event's id (Last-Event-ID) and read faster`;
		res.write(sseEvent("error", stringifyExact(errorBody(429, "SLOW_READER", message))));
		res.end();
		// A reader that never reads never lets the end through either.
		setTimeout(() => res.destroy(), 5000).unref();
		return "slow";
	}
	return signal.aborted ? "gone" : "done";
}

/** Whether `res` holds at most `bytes` unread again within `ms` (false also when the client goes). */
function unread(res: Writable, bytes: number, ms: number, signal: AbortSignal): Promise<boolean> {
	return new Promise((resolve) => {
		const done = (ok: boolean) => {
			clearTimeout(t);
			clearInterval(check);
			res.off("drain", onDrain);
			signal.removeEventListener("abort", onAbort);
			resolve(ok);
		};
		// 'drain' comes only after a write that filled the stream's own buffer: look now and then too.
		const onDrain = () => res.writableLength <= bytes && done(true);
		const onAbort = () => done(false);
		const t = setTimeout(() => done(false), ms);
		const check = setInterval(onDrain, 100);
		res.on("drain", onDrain);
		signal.addEventListener("abort", onAbort, { once: true });
	});
}
