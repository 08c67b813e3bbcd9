/** One Server-Sent Event as a client reads it. */
export interface SseEvent {
	event: string;
	data: string;
	id?: string;
}

/** The events of an SSE text (whole events only; a trailing partial one is left out). */
export function parseSse(text: string): { events: SseEvent[]; rest: string } {
	const events: SseEvent[] = [];
	const blocks = text.split("\n\n");
	const rest = blocks.pop() ?? "";
	for (const block of blocks) {
		const ev: SseEvent = { event: "message", data: "" };
		let fields = 0;
		for (const line of block.split("\n")) {
			const i = line.indexOf(":");
			if (i <= 0) continue;
			const [k, v] = [line.slice(0, i), line.slice(i + 1).replace(/^ /, "")];
			if (k === "event") ev.event = v;
			else if (k === "data") ev.data = v;
			else if (k === "id") ev.id = v;
			else continue;
			fields++;
		}
		if (fields > 0) events.push(ev);
	}
	return { events, rest };
}

/**
 * A stream read over a real socket (fetch): `events` grows as they arrive; `close()` aborts it
 * (the client going away); `ended` settles when the server ends it.
 */
export function openSse(url: string, headers: Record<string, string>) {
	const ac = new AbortController();
	const events: SseEvent[] = [];
	/** When each event arrived (Date.now()), in the order of `events`. */
	const times: number[] = [];
	let status = 0;
	let body = "";
	const ended = (async () => {
		try {
			const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: ac.signal });
			status = res.status;
			if (!res.body) return;
			const decoder = new TextDecoder();
			let buf = "";
			for await (const chunk of res.body) {
				const text = decoder.decode(chunk as Uint8Array, { stream: true });
				buf += text;
				body += text;
				const { events: got, rest } = parseSse(buf);
				events.push(...got);
				for (const _ of got) times.push(Date.now());
				buf = rest;
			}
		} catch (err) {
			if (!ac.signal.aborted) throw err;
		}
	})();
	return {
		events,
		times,
		status: () => status,
		body: () => body,
		ended,
		close() {
			ac.abort();
		},
	};
}

/** A consumer applying a stream's events: items appended, those above a reorg's block dropped. */
export function appliedItems(events: SseEvent[]): Record<string, unknown>[] {
	let items: Record<string, unknown>[] = [];
	for (const e of events) {
		if (e.event === "item") items.push(JSON.parse(e.data));
		else if (e.event === "reorg") {
			const n = JSON.parse(e.data).block_number as number;
			items = items.filter((i) => Number(i.block_number) <= n);
		}
	}
	return items;
}
