// A webhook receiver: checks each delivery's signature, prints its events, answers 204.
//   node examples/hook-receiver.mjs --port 9000 --secret "$SECRET"
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { port: { type: "string", default: "9000" }, secret: { type: "string" } } });
const server = createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		const body = Buffer.concat(chunks).toString("utf8");
		const ts = String(req.headers["x-chainlake-timestamp"] ?? "");
		const expected = Buffer.from(`sha256=${createHmac("sha256", values.secret).update(`${ts}.${body}`).digest("hex")}`);
		const given = Buffer.from(String(req.headers["x-chainlake-signature"] ?? ""));
		const fresh = Math.abs(Date.now() / 1000 - Number(ts)) < 300; // an old delivery replayed by someone else
		if (!fresh || given.length !== expected.length || !timingSafeEqual(given, expected)) {
			console.log("refused: bad signature");
			return res.writeHead(401).end();
		}
		for (const e of JSON.parse(body).events)
			console.log(e.type === "item" ? `item ${e.item.id} block ${e.block_number}` : `reorg to block ${e.block_number}`);
		res.writeHead(204).end();
	});
});
server.listen(Number(values.port), "127.0.0.1", () => console.log(`listening on ${server.address().port}`));
