import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { FeedEvent } from "../../src/api/live/feed.js";
import { writeEvents } from "../../src/api/live/sse-writer.js";

/*
 * The slow-reader rule on a stalled connection. A stand-in for the socket here: a TCP peer that
 * stops reading cannot be made to stall before the kernel's buffers (megabytes on loopback) fill,
 * so the socket is a Writable that accepts bytes as slowly as a test says. The rule itself reads
 * only the response's Writable side (writableLength, 'drain'), which a socket and this share.
 */

/** Items of 4 KiB, forever (until the writer stops pulling). */
async function* items(): AsyncGenerator<FeedEvent> {
	for (let i = 0; ; i++) {
		const text = JSON.stringify({ id: i, pad: "x".repeat(4096) });
		yield { type: "item", id: `c${i}`, block_number: i, item: {}, text };
	}
}

/** A socket whose reader takes one chunk every `everyMs` (never, with Infinity). */
function socket(everyMs: number) {
	const written: string[] = [];
	const w = new Writable({
		highWaterMark: 16 * 1024,
		write(chunk, _enc, done) {
			written.push(String(chunk));
			if (Number.isFinite(everyMs)) setTimeout(done, everyMs);
		},
	});
	return { w, written };
}

describe("slow readers", () => {
	it("a reader that stops reading is sent SLOW_READER and dropped, its buffer bounded", async () => {
		const { w, written } = socket(Number.POSITIVE_INFINITY);
		const stop = new AbortController();
		const started = Date.now();
		const how = await writeEvents(items(), w, { bufferBytes: 64 * 1024, slowReaderMs: 300 }, stop.signal);
		expect(how).toBe("slow");
		expect(Date.now() - started).toBeGreaterThanOrEqual(290);
		// Bounded: the buffer limit and one event past it, not the endless feed.
		expect(w.writableLength).toBeLessThan(64 * 1024 + 2 * 4200 + 1000);
		expect(w.writableEnded).toBe(true);
		// The last event written (still queued for the reader) says why.
		const queued = (w as unknown as { writableBuffer: { chunk: unknown }[] }).writableBuffer.map((c) =>
			String(c.chunk),
		);
		expect([...written, ...queued].at(-1)).toMatch(/^event: error\ndata: .*"code":"SLOW_READER".*read faster/);
	});

	it("a reader slower than the feed but reading is kept", async () => {
		const { w, written } = socket(1);
		const stop = new AbortController();
		setTimeout(() => stop.abort(), 1000);
		const how = await writeEvents(items(), w, { bufferBytes: 64 * 1024, slowReaderMs: 300 }, stop.signal);
		expect(how).toBe("gone");
		expect(written.length).toBeGreaterThan(50);
		expect(written.some((t) => t.includes("SLOW_READER"))).toBe(false);
	});
});
