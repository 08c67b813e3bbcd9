/**
 * Paging (api-contract.md §5) on every list endpoint over the anvil workload: walking
 * `next_offset` with limit 1, 2 and 7 yields exactly the single-page list (limit 1000), in order,
 * without duplicates or gaps, ascending and with order=desc. Then new blocks land between pages:
 * the contract re-resolves the range on every request (`latest` is the head at that request) and
 * pages strictly after the last seen id, so a walk over a range ending at `latest` never repeats
 * or skips an original item, and an ascending walk picks up the new items at its end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backfillInto } from "../helpers/anvil-chain.js";
import { type ApiFixture, type NodeApiFixture, startApiOnNode, startApiOnWorkload } from "../helpers/api.js";

type Item = Record<string, unknown>;
interface Envelope {
	range: { has_more: boolean; start_block: number; end_block: number; next_offset: string | null };
	items: Item[];
}

interface ListCase {
	name: string;
	path: string;
	/** Filters (and range) resent on every page. */
	query: Record<string, string>;
	/** The paging key of an item: its id, or for /blocks its hash. */
	key: "id" | "hash";
	/** The list has at least this many items in the workload. */
	min: number;
}

const qs = (q: Record<string, string | number | undefined>) =>
	Object.entries(q)
		.filter(([, v]) => v !== undefined)
		.map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
		.join("&");

async function page(f: ApiFixture | NodeApiFixture, c: ListCase, extra: Record<string, string | number | undefined>) {
	const url = `${c.path}?${qs({ ...c.query, ...extra })}`;
	const res = await f.get(url);
	expect(res.status, `${url}: ${res.raw.slice(0, 300)}`).toBe(200);
	const body = res.body as unknown as Envelope;
	expect(Object.keys(body).sort()).toEqual(["items", "range"]);
	return body;
}

/** Pages through a list one request at a time; `next()` fetches one page, `rest()` the others. */
function walker(f: ApiFixture | NodeApiFixture, c: ListCase, limit: number, order: "asc" | "desc") {
	const items: Item[] = [];
	const envelopes: Envelope[] = [];
	let offset: string | undefined;
	let done = false;
	const next = async () => {
		if (done) throw new Error("walk already finished");
		const body = await page(f, c, { limit, order: order === "desc" ? "desc" : undefined, offset });
		envelopes.push(body);
		const { range } = body;
		expect(body.items.length, `${c.name}: page ${envelopes.length}`).toBeLessThanOrEqual(limit);
		items.push(...body.items);
		if (range.has_more) {
			// A page that says "more" is full, and its next_offset is the key of its last item.
			expect(body.items.length, `${c.name}: page ${envelopes.length} has_more`).toBe(limit);
			expect(range.next_offset).toBe(body.items[body.items.length - 1]?.[c.key]);
			offset = range.next_offset as string;
		} else {
			expect(range.next_offset, `${c.name}: last page`).toBeNull();
			done = true;
		}
		if (envelopes.length > 5000) throw new Error(`${c.name}: walk does not end`);
		return body;
	};
	return {
		items,
		envelopes,
		next,
		get done() {
			return done;
		},
		async rest() {
			while (!done) await next();
			return items;
		},
	};
}

const keys = (items: Item[], key: string) => items.map((i) => i[key] as string);

function expectNoDuplicates(items: Item[], key: string, what: string) {
	const k = keys(items, key);
	const dupes = k.filter((x, i) => k.indexOf(x) !== i);
	expect(dupes, `${what}: duplicates`).toEqual([]);
}

/** Chain order: ids ascend (they sort in chain order, §5); blocks by number. */
function expectChainOrder(items: Item[], c: ListCase, order: "asc" | "desc") {
	const sortKey = (i: Item) => (c.key === "hash" ? String(i.number).padStart(20, "0") : (i.id as string));
	const seq = items.map(sortKey);
	const sorted = [...seq].sort();
	if (order === "desc") sorted.reverse();
	expect(seq, `${c.name}: ${order} order`).toEqual(sorted);
}

describe("walking next_offset on every list endpoint", () => {
	let f: ApiFixture;
	let cases: ListCase[];

	beforeAll(async () => {
		f = await startApiOnWorkload();
		const v1 = `/${f.chain}/v1`;
		const a = f.work.accounts;
		const k = f.work.contracts;
		const range = { block_number_start: "0", block_number_end: "latest" };
		cases = [
			{
				name: "alice native transfers",
				path: `${v1}/address/${a.alice}/transfers`,
				query: { asset_type: "native" },
				key: "id",
				min: 4,
			},
			{
				name: "deployer ft transfers",
				path: `${v1}/address/${a.deployer}/transfers`,
				query: { asset_type: "ft" },
				key: "id",
				min: 5,
			},
			{
				name: "alice nft transfers",
				path: `${v1}/address/${a.alice}/transfers`,
				query: { asset_type: "nft" },
				key: "id",
				min: 9,
			},
			{
				name: "alice transfers of every type",
				path: `${v1}/address/${a.alice}/transfers`,
				query: { asset_type: "native,ft,nft", ...range },
				key: "id",
				min: 14,
			},
			{ name: "deployer txs", path: `${v1}/address/${a.deployer}/txs`, query: {}, key: "id", min: 21 },
			{
				name: "alice txs with logs",
				path: `${v1}/address/${a.alice}/txs`,
				query: { include_logs: "true" },
				key: "id",
				min: 10,
			},
			{ name: "token1155 transfers", path: `${v1}/contract/${k.token1155}/transfers`, query: {}, key: "id", min: 6 },
			{ name: "token20 transfers", path: `${v1}/contract/${k.token20}/transfers`, query: range, key: "id", min: 5 },
			{ name: "events by origin", path: `${v1}/events`, query: { origin: a.deployer }, key: "id", min: 11 },
			{
				name: "events by contract",
				path: `${v1}/events`,
				query: { contract: `${k.token20},${k.token1155}` },
				key: "id",
				min: 12,
			},
			{ name: "calls from deployer", path: `${v1}/calls`, query: { from: a.deployer }, key: "id", min: 21 },
			{ name: "calls by origin alice", path: `${v1}/calls`, query: { origin: a.alice }, key: "id", min: 14 },
			{
				name: "creations by origin",
				path: `${v1}/contracts/creates`,
				query: { origin: a.deployer },
				key: "id",
				min: 8,
			},
			{
				name: "creations by caller (factory)",
				path: `${v1}/contracts/creates`,
				query: { caller: k.factory },
				key: "id",
				min: 2,
			},
			// The workload has one self-destruct: the walk still has to find it exactly once.
			{
				name: "self-destructs by origin",
				path: `${v1}/contracts/self-destructs`,
				query: { origin: a.carol },
				key: "id",
				min: 1,
			},
			{ name: "blocks 0..latest", path: `${v1}/blocks`, query: range, key: "hash", min: 30 },
			{
				name: "blocks -20..latest",
				path: `${v1}/blocks`,
				query: { block_number_start: "-20", block_number_end: "latest" },
				key: "hash",
				min: 21,
			},
			{
				name: "logs of the odd-logs tx",
				path: `${v1}/events`,
				query: { origin: f.work.accounts.dave },
				key: "id",
				min: 3,
			},
		];
	});
	afterAll(async () => {
		await f?.close();
	});

	it("the lists are non-trivial and fit one page of 1000", async () => {
		for (const c of cases) {
			const one = await page(f, c, { limit: 1000 });
			expect(one.items.length, c.name).toBeGreaterThanOrEqual(c.min);
			expect(one.range.has_more, c.name).toBe(false);
			expect(one.range.next_offset, c.name).toBeNull();
			expectNoDuplicates(one.items, c.key, c.name);
			expectChainOrder(one.items, c, "asc");
			const desc = await page(f, c, { limit: 1000, order: "desc" });
			expect(desc.items, `${c.name}: desc is asc reversed`).toEqual([...one.items].reverse());
		}
	});

	for (const order of ["asc", "desc"] as const) {
		for (const limit of [1, 2, 7]) {
			it(`limit ${limit}, ${order}: the walk equals the single page, in order, no duplicates or gaps`, async () => {
				for (const c of cases) {
					const all = (await page(f, c, { limit: 1000, order: order === "desc" ? "desc" : undefined })).items;
					const w = walker(f, c, limit, order);
					const walked = await w.rest();
					const what = `${c.name} (limit ${limit}, ${order})`;
					expectNoDuplicates(walked, c.key, what);
					expect(keys(walked, c.key), `${what}: keys`).toEqual(keys(all, c.key));
					expect(walked, `${what}: items`).toEqual(all);
					expectChainOrder(walked, c, order);
					// Exactly as many pages as needed (the last full page already says has_more=false).
					expect(w.envelopes.length, `${what}: pages`).toBe(Math.max(1, Math.ceil(all.length / limit)));
					// Every page reports the same resolved range.
					const ranges = new Set(w.envelopes.map((e) => `${e.range.start_block}-${e.range.end_block}`));
					expect(ranges.size, `${what}: range`).toBe(1);
				}
			});
		}
	}

	it("an offset taken from the middle of the list resumes right after that item", async () => {
		for (const c of cases) {
			const all = (await page(f, c, { limit: 1000 })).items;
			for (const i of [0, Math.floor(all.length / 2), all.length - 1]) {
				const after = all[i]?.[c.key] as string;
				const rest = await page(f, c, { limit: 1000, offset: after });
				expect(keys(rest.items, c.key), `${c.name} after #${i}`).toEqual(keys(all.slice(i + 1), c.key));
				const before = await page(f, c, { limit: 1000, offset: after, order: "desc" });
				expect(keys(before.items, c.key), `${c.name} before #${i} (desc)`).toEqual(
					keys(all.slice(0, i).reverse(), c.key),
				);
			}
		}
	});
});

describe("new blocks land between pages (range ending at latest)", () => {
	let f: NodeApiFixture;

	beforeAll(async () => {
		f = await startApiOnNode();
	});
	afterAll(async () => {
		await f?.close();
	});

	async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
		const res = await fetch(f.anvil.url, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
		});
		const json = (await res.json()) as { result?: T; error?: { message: string } };
		if (json.error) throw new Error(`${method}: ${json.error.message}`);
		return json.result as T;
	}

	/** ETH transfer from one of anvil's unlocked dev accounts; waits for its receipt. */
	async function sendEth(from: string, to: string, wei: bigint) {
		const hash = await rpc<string>("eth_sendTransaction", [{ from, to, value: `0x${wei.toString(16)}` }]);
		for (let i = 0; i < 200; i++) {
			const receipt = await rpc<{ status: string; blockNumber: string } | null>("eth_getTransactionReceipt", [hash]);
			if (receipt) {
				expect(receipt.status).toBe("0x1");
				return { hash, block: Number(receipt.blockNumber) };
			}
			await new Promise((r) => setTimeout(r, 25));
		}
		throw new Error(`no receipt for ${hash}`);
	}

	it("no duplicates, no gaps; ascending walks end with the new items, descending walks with the oldest", async () => {
		const v1 = `/${f.chain}/v1`;
		const a = f.work.accounts;
		const latest = { block_number_start: "0", block_number_end: "latest" };
		const cases: ListCase[] = [
			{
				name: "alice native transfers",
				path: `${v1}/address/${a.alice}/transfers`,
				query: { asset_type: "native", ...latest },
				key: "id",
				min: 4,
			},
			{ name: "alice txs", path: `${v1}/address/${a.alice}/txs`, query: latest, key: "id", min: 10 },
			{ name: "blocks", path: `${v1}/blocks`, query: latest, key: "hash", min: 30 },
			{ name: "calls by origin alice", path: `${v1}/calls`, query: { origin: a.alice, ...latest }, key: "id", min: 14 },
		];
		const oldHead = (await f.get(`${v1}/blocks/latest`)).body.number as number;
		expect(Number(await rpc<string>("eth_blockNumber"))).toBe(oldHead);

		// The lists before the new blocks, and the first page of each walk.
		const before = new Map<string, Item[]>();
		const walks: { c: ListCase; order: "asc" | "desc"; limit: number; w: ReturnType<typeof walker> }[] = [];
		for (const c of cases) {
			const all = (await page(f, c, { limit: 1000 })).items;
			expect(all.length, c.name).toBeGreaterThanOrEqual(c.min);
			before.set(c.name, all);
			for (const [order, limit] of [
				["asc", 2],
				["asc", 3],
				["desc", 2],
			] as const) {
				const w = walker(f, c, limit, order);
				await w.next();
				expect(w.done, `${c.name}: more than one page`).toBe(false);
				walks.push({ c, order, limit, w });
			}
		}

		// New blocks: ETH to, from and to alice again, and one empty block.
		const sent = [
			await sendEth(a.deployer, a.alice, 10n ** 18n),
			await sendEth(a.alice, a.bob, 5n * 10n ** 17n),
			await sendEth(a.carol, a.alice, 25n * 10n ** 16n),
		];
		await rpc("evm_mine");
		const newHead = Number(await rpc<string>("eth_blockNumber"));
		expect(newHead).toBeGreaterThanOrEqual(oldHead + 4);
		expect(sent.every((s) => s.block > oldHead)).toBe(true);
		await backfillInto(f.dataDir, f.anvil.url, 31337, { from: oldHead + 1, to: newHead, partitionSize: 8 });
		expect((await f.get(`${v1}/blocks/latest`)).body.number).toBe(newHead);

		for (const { c, order, limit, w } of walks) {
			const what = `${c.name} (limit ${limit}, ${order})`;
			const walked = await w.rest();
			const original = before.get(c.name) as Item[];
			const now = (await page(f, c, { limit: 1000 })).items;
			const added = now.filter((i) => Number(i.block_number ?? i.number) > oldHead);
			// The fresh list is the original one followed by the new items.
			expect(keys(now, c.key), `${what}: fresh list`).toEqual(keys([...original, ...added], c.key));
			expect(added.length, `${what}: new items exist`).toBeGreaterThan(0);

			expectNoDuplicates(walked, c.key, what);
			const old = walked.filter((i) => Number(i.block_number ?? i.number) <= oldHead);
			if (order === "asc") {
				// Nothing original is skipped or repeated, and the range (re-resolved per request)
				// now ends at the new head, so the new items follow at the end.
				expect(keys(old, c.key), `${what}: original items`).toEqual(keys(original, c.key));
				expect(keys(walked, c.key), `${what}: walk`).toEqual(keys([...original, ...added], c.key));
				expect(w.envelopes[0]?.range.end_block, `${what}: first page's end`).toBe(oldHead);
				expect(w.envelopes[w.envelopes.length - 1]?.range.end_block, `${what}: last page's end`).toBe(newHead);
			} else {
				// Descending, the walk started at the old head: it goes on down to the first item,
				// and the new items (above the cursor) do not appear.
				expect(keys(walked, c.key), `${what}: walk`).toEqual(keys([...original].reverse(), c.key));
			}
		}
	});
});
