/**
 * A notebook's session, in TypeScript: page through a wallet's transfers as typed Arrow, then ask
 * the lake a question the routes do not answer, in SQL.
 *
 *   npx tsx examples/wallet-transfers.ts --url http://127.0.0.1:8080 --key $KEY --chain eip155-31337 --address 0x...
 *
 * The server needs the SQL endpoint on for the second part (serve --sql, or CHAINLAKE_SQL=1).
 */
import { parseArgs } from "node:util";
import { type Table, tableFromIPC } from "apache-arrow";

const { values } = parseArgs({
	options: {
		url: { type: "string", default: "http://127.0.0.1:8080" },
		key: { type: "string", default: process.env.CHAINLAKE_KEY ?? "" },
		chain: { type: "string", default: "eip155-31337" },
		address: { type: "string" },
	},
});
const address = (values.address ?? "").toLowerCase();
// The address goes into SQL text below: take nothing but an address.
if (!/^0x[0-9a-f]{40}$/.test(address)) throw new Error("--address must be a 0x address of 40 hex digits");
const api = `${values.url}/${values.chain}/v1`;
const auth = { authorization: `Bearer ${values.key}` };

// 1. Every transfer of the wallet, a page of Arrow at a time: the paging state is in headers.
const pages: Table[] = [];
let offset = "";
for (;;) {
	const url = `${api}/address/${address}/transfers?asset_type=native,ft,nft&limit=1000&format=arrow${offset ? `&offset=${offset}` : ""}`;
	const res = await fetch(url, { headers: auth });
	if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
	pages.push(tableFromIPC(new Uint8Array(await res.arrayBuffer())));
	if (res.headers.get("x-has-more") !== "true") break;
	offset = res.headers.get("x-next-offset") ?? "";
}
const transfers = pages.reduce((all, page) => all.concat(page));
const types = Object.fromEntries(transfers.schema.fields.map((f) => [f.name, String(f.type)]));
console.log(`transfers: ${transfers.numRows} rows in ${pages.length} page(s)`);
console.log(`types: block_number ${types.block_number}, value ${types.value}, asset_type ${types.asset_type}`);

// 2. A question in SQL: what the wallet received per token standard, summed as numbers.
const sql = `SELECT token_standard, count(*) AS transfers, sum(value_f64) AS received
FROM transfers WHERE recipient = '${address}' GROUP BY token_standard ORDER BY token_standard`;
const res = await fetch(`${api}/sql`, {
	method: "POST",
	headers: { ...auth, "content-type": "text/plain" },
	body: sql,
});
const answer = (await res.json()) as { items?: Record<string, unknown>[]; message?: string };
if (!res.ok) throw new Error(`sql: ${res.status} ${answer.message}`);
for (const row of answer.items ?? [])
	console.log(`received ${row.token_standard}: ${row.transfers} transfers, ${row.received} in total`);
