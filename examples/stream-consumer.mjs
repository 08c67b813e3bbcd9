// A stream consumer: a wallet's transfers from block 0 into the live head (or up to --end), kept
// exact through reorgs, resumed after a dropped connection from the last event's id.
//   node examples/stream-consumer.mjs --url http://127.0.0.1:8080 --key "$KEY" --chain eip155-1 --address 0x... [--end 100]
import { parseArgs } from "node:util";

const o = { type: "string" };
const { values: a } = parseArgs({
	options: { url: o, key: o, chain: o, address: o, end: { ...o, default: "latest" } },
});
const url = `${a.url}/${a.chain}/v1/address/${a.address}/transfers?asset_type=native,ft,nft&block_number_start=0&block_number_end=${a.end}`;
let items = []; // every item so far, none of a block a reorg took away
let lastId = "";
for (let ended = false; !ended; ) {
	try {
		const headers = { accept: "text/event-stream", authorization: `Bearer ${a.key}` };
		const res = await fetch(url, { headers: lastId ? { ...headers, "last-event-id": lastId } : headers });
		if (res.status !== 200)
			throw Object.assign(new Error(`${res.status} ${await res.text()}`), { fatal: res.status < 429 });
		let buf = "";
		for await (const chunk of res.body.pipeThrough(new TextDecoderStream()))
			for (buf += chunk; buf.includes("\n\n"); buf = buf.slice(buf.indexOf("\n\n") + 2)) {
				const ev = Object.fromEntries(
					buf
						.slice(0, buf.indexOf("\n\n"))
						.split("\n")
						.map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]),
				);
				if (ev.id) lastId = ev.id;
				if (ev.event === "item") items.push(JSON.parse(ev.data));
				if (ev.event === "reorg") items = items.filter((t) => t.block_number <= JSON.parse(ev.data).block_number);
				if (ev.event === "error") console.error(`server: ${ev.data}`);
				ended ||= ev.event === "end";
			}
	} catch (err) {
		if (err.fatal) throw err; // a 4xx: the request is wrong, asking again will not help
	}
	if (ended) break;
	console.error(`stream cut: resuming after ${lastId || "the start"}`);
	await new Promise((r) => setTimeout(r, 1000));
}
for (const t of items) console.log(`holding ${t.id} block ${t.block_number}`);
