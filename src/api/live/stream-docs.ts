import { STREAM_ROUTES } from "./streams.js";

/*
 * The OpenAPI document's word on streams: each streaming list route's 200 also comes as
 * text/event-stream, with the Last-Event-ID header. `cursor` and `confirmations` are described
 * there, not listed as query parameters: only a stream takes them (the JSON list refuses them).
 */

const STREAM_TEXT =
	"With `Accept: text/event-stream`: the same query as Server-Sent Events (docs/api-contract.md §11), every item from the range start in chain order, then each new one as the lake stores its block, until `block_number_end` (or forever). Events: `item` (`id`: a cursor; `data`: the item exactly as the JSON list returns it), `reorg` (`data: {block_number, block_hash}`: drop your items above that block), `head` (the stored head and the last block whose items were all sent, at least every 15 s), `end`, `error`. A stream takes the route's parameters except offset, order, format and limit, and two of its own: `cursor` (resume after that event id; the Last-Event-ID header wins) and `confirmations` (0 to 64: items only from blocks that deep). 429 STREAM_LIMIT past the open streams a key or the server may have.";

const EXAMPLE = `event: item
id: eyJ2IjoxLCJxIjoi...
data: {"id":"0000000000000021-0000-80000000","block_number":33,"...":"..."}

event: head
data: {"block_number":40,"block_hash":"0x...","scanned_through":40}

`;

type Operation = {
	description?: string;
	parameters?: object[];
	responses?: Record<string, { description?: string; content?: Record<string, object> }>;
};

/** `doc` (an OpenAPI 3 object) with text/event-stream on every streaming list route. */
export function streamDocs<T>(doc: T): T {
	const paths = (doc as { paths?: Record<string, { get?: Operation }> }).paths ?? {};
	for (const route of STREAM_ROUTES) {
		const op = paths[route.replace(/:(\w+)/g, "{$1}")]?.get;
		if (!op) continue;
		op.description = `${op.description ?? ""} Also a stream of Server-Sent Events with Accept: text/event-stream (see the 200 answer).`;
		op.parameters = [
			...(op.parameters ?? []),
			{
				in: "header",
				name: "Last-Event-ID",
				required: false,
				schema: { type: "string", maxLength: 1000 },
				description:
					"Streams only: resume after this event id (what an EventSource sends when it reconnects). Example: `eyJ2IjoxLCJxIjoi...`.",
			},
		];
		op.responses = {
			...op.responses,
			200: {
				description: `The page (JSON envelope, or NDJSON, CSV, Arrow with format= or Accept). ${STREAM_TEXT}`,
				content: {
					"application/json": { schema: { type: "object" } },
					"application/x-ndjson": { schema: { type: "string" } },
					"text/csv": { schema: { type: "string" } },
					"application/vnd.apache.arrow.stream": { schema: { type: "string", format: "binary" } },
					"text/event-stream": { schema: { type: "string" }, example: EXAMPLE },
				},
			},
		};
	}
	return doc;
}
