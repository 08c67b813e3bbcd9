import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiFixture, startApiOnWorkload, TEST_KEY } from "../helpers/api.js";
import { type Chromium, launchChromium, openTab, requireChromium } from "../helpers/chromium.js";

type Tab = Awaited<ReturnType<typeof openTab>>;

/*
 * /docs as a newcomer's browser shows it: the API on a real socket over a small real lake, the
 * page loaded in headless Chromium. Every route of the OpenAPI document is listed, every parameter
 * shows its type and description, "Try it out" answers, and nothing goes wrong on the way: no
 * script error, no console error, no failed or refused request (the page's CSP included).
 * Screenshots go to $CHAINLAKE_SCREENSHOTS (default: the temp folder), to look at.
 */

interface Parameter {
	name: string;
	in: "query" | "path";
	description?: string;
	schema: { type?: string; anyOf?: { type: string }[]; items?: { type: string } };
}
type Document = { paths: Record<string, Record<string, { parameters?: Parameter[] }>> };

const SCREENSHOTS = process.env.CHAINLAKE_SCREENSHOTS ?? tmpdir();

let f: ApiFixture;
let browser: Chromium;
let base: string;
let doc: Document;
/** What went wrong in the browser, in any tab: each test expects none. */
const problems: string[] = [];
/** Every URL the browser asked for. */
const requested: string[] = [];

beforeAll(async () => {
	requireChromium();
	f = await startApiOnWorkload();
	base = await f.app.listen({ port: 0, host: "127.0.0.1" });
	doc = (await (await fetch(`${base}/openapi.json`)).json()) as Document;
	browser = await launchChromium();
	const urls = new Map<string, string>();
	browser.onEvent(({ method, params }) => {
		if (method === "Network.requestWillBeSent") {
			urls.set(params.requestId, params.request.url);
			requested.push(params.request.url);
		}
		if (method === "Runtime.exceptionThrown")
			problems.push(`script error: ${params.exceptionDetails.exception?.description ?? params.exceptionDetails.text}`);
		if (method === "Runtime.consoleAPICalled" && (params.type === "error" || params.type === "assert"))
			problems.push(`console.${params.type}: ${params.args.map((a: { value?: unknown }) => a.value).join(" ")}`);
		// Resources the page could not load, CSP refusals, and the like.
		if (method === "Log.entryAdded" && params.entry.level === "error")
			problems.push(`${params.entry.source}: ${params.entry.text} ${params.entry.url ?? ""}`);
		if (method === "Network.loadingFailed")
			problems.push(
				`request failed: ${urls.get(params.requestId)} ${params.errorText} ${params.blockedReason ?? ""}`.trim(),
			);
		if (method === "Network.responseReceived" && params.response.status >= 400)
			problems.push(`HTTP ${params.response.status}: ${params.response.url}`);
	});
}, 180_000);

afterAll(async () => {
	await browser?.close();
	await f?.close();
});

/** The docs page in a new tab, once swagger-ui has rendered one block per operation. */
async function docsTab() {
	const tab = await openTab(browser);
	await tab.send("Page.navigate", { url: `${base}/docs/` });
	const operations = Object.values(doc.paths).flatMap((methods) => Object.keys(methods)).length;
	await tab.waitUntil(`document.querySelectorAll('.opblock').length === ${operations}`);
	return tab;
}

/** The expression of the page's block for one operation. */
const operation = (method: string, path: string) =>
	`[...document.querySelectorAll('.opblock-${method}')].find((o) => o.querySelector('.opblock-summary-path')?.dataset.path === ${JSON.stringify(path)})`;

/** Types an input as a user would: React (swagger-ui) only sees input events. */
const typeInto = (input: string, value: string) =>
	`(() => { const i = ${input}; Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(i, ${JSON.stringify(value)}); i.dispatchEvent(new Event('input', { bubbles: true })); })()`;

/** Markdown as the page shows it: no backticks, spaces collapsed. */
const shown = (markdown: string) => markdown.replaceAll("`", "").replace(/\s+/g, " ").trim();

async function saveScreenshot(png: Buffer, name: string) {
	// A PNG (its signature), as wide as the tab: the page rendered to pixels, not an error page.
	expect(png.subarray(1, 4).toString()).toBe("PNG");
	expect(png.readUInt32BE(16)).toBe(1400);
	const file = join(SCREENSHOTS, name);
	await writeFile(file, png);
	return file;
}

describe("/docs in Chromium", () => {
	it("lists every route of the OpenAPI document, with no script error, console error or failed request", async () => {
		const tab = await docsTab();
		const expected = Object.entries(doc.paths).flatMap(([path, methods]) =>
			Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
		);
		expect(expected.length).toBeGreaterThan(20);
		const rendered = await tab.evaluate<string[]>(
			`[...document.querySelectorAll('.opblock')].map((o) => o.querySelector('.opblock-summary-method').textContent + ' ' + o.querySelector('.opblock-summary-path').dataset.path)`,
		);
		expect(rendered.sort()).toEqual(expected.sort());
		// The page's title and its description come from the document too.
		expect(await tab.evaluate<string>("document.querySelector('.info .title').textContent")).toContain("chainlake");
		const file = await saveScreenshot(await tab.screenshot(3000), "chainlake-docs-routes.png");
		expect(problems, `screenshot: ${file}`).toEqual([]);
	});

	it("shows each parameter of each route with its type and description", async () => {
		const tab = await docsTab();
		// Open every operation (collapsed by default), then wait until each shows its parameters.
		await tab.evaluate("document.querySelectorAll('.opblock-summary-control').forEach((b) => b.click())");
		const expected = Object.values(doc.paths).flatMap((methods) =>
			Object.values(methods).flatMap((op) => op.parameters ?? []),
		);
		await tab.waitUntil(`document.querySelectorAll('tr[data-param-name]').length === ${expected.length}`);
		let checked = 0;
		for (const [path, methods] of Object.entries(doc.paths)) {
			for (const [method, op] of Object.entries(methods)) {
				const rows = await tab.evaluate<Record<string, { type: string; description: string }>>(
					`Object.fromEntries([...${operation(method, path)}.querySelectorAll('tr[data-param-name]')].map((r) => [r.dataset.paramIn + ' ' + r.dataset.paramName, { type: r.querySelector('.parameter__type').textContent, description: r.querySelector('.parameters-col_description').innerText }]))`,
				);
				for (const p of op.parameters ?? []) {
					const row = rows[`${p.in} ${p.name}`];
					const where = `${method.toUpperCase()} ${path} ${p.in} ${p.name}`;
					expect(row, where).toBeDefined();
					// The type the document gives (an array as array<items>; a block number, integer or
					// latest, as one of them), never an empty cell.
					const types = p.schema.anyOf
						? p.schema.anyOf.map((s) => s.type)
						: [p.schema.type === "array" ? `array<${p.schema.items?.type}>` : p.schema.type];
					expect(types, where).toContain(row?.type);
					expect(p.description, where).toBeTruthy();
					expect(shown(row?.description ?? ""), where).toContain(shown(p.description ?? ""));
					checked++;
				}
			}
		}
		expect(checked).toBe(expected.length);
		// Spot checks of what a reader sees: the bounds and default of limit, a boolean, a list.
		const transfers = operation("get", "/{chain_id}/v1/address/{address}/transfers");
		const cell = (name: string) =>
			tab.evaluate<string>(`${transfers}.querySelector('tr[data-param-name="${name}"]').innerText`);
		expect(await cell("limit")).toMatch(/integer[\s\S]*1 to 1000[\s\S]*Default value : 100/);
		expect(await cell("contract")).toMatch(/array<string>[\s\S]*comma-separated, at most 20/);
		expect(await cell("asset_type")).toMatch(/Available values : native, ft, nft, multi/);
		const txs = operation("get", "/{chain_id}/v1/address/{address}/txs");
		expect(await tab.evaluate<string>(`${txs}.querySelector('tr[data-param-name="include_logs"]').innerText`)).toMatch(
			/boolean/,
		);
		const file = await saveScreenshot(await tab.screenshot(5000), "chainlake-docs-parameters.png");
		expect(problems, `screenshot: ${file}`).toEqual([]);
	});

	it("answers Try it out with the key given under Authorize", async () => {
		const tab = await docsTab();
		await authorize(tab);
		const latest = operation("get", "/{chain_id}/v1/blocks/latest");
		const answer = await tryItOut(tab, latest);
		const head = (await f.get(`/${f.chain}/v1/blocks/latest`)).body;
		expect(answer.status).toBe("200");
		expect(JSON.parse(answer.body)).toMatchObject({ hash: head.hash, number: head.number });
		const file = await saveScreenshot(await tab.screenshot(2500), "chainlake-docs-try-it-out.png");
		expect(problems, `screenshot: ${file}`).toEqual([]);
	});

	it("sends a list parameter as the API takes it: comma-separated, once", async () => {
		const tab = await docsTab();
		await authorize(tab);
		const events = operation("get", "/{chain_id}/v1/events");
		const contracts = [f.work.contracts.token20, f.work.contracts.token721].map((a) => a.toLowerCase());
		const answer = await tryItOut(tab, events, async () => {
			const row = `${events}.querySelector('tr[data-param-name="contract"]')`;
			for (const address of contracts) {
				await tab.evaluate(`${row}.querySelector('.json-schema-form-item-add').click()`);
				await tab.waitUntil(`${row}.querySelectorAll('input').length === ${contracts.indexOf(address) + 1}`);
				await tab.evaluate(typeInto(`[...${row}.querySelectorAll('input')].at(-1)`, address));
			}
		});
		const query = `contract=${contracts.join(",")}`;
		expect(requested.some((u) => u.endsWith(`/${f.chain}/v1/events?limit=100&order=asc&${query}`))).toBe(true);
		expect(answer.status).toBe("200");
		// The page shows what the API answers to the same request: both contracts' logs.
		const direct = await f.get(`/${f.chain}/v1/events?${query}`);
		const shownItems = JSON.parse(answer.body).items as { contract: string }[];
		expect(shownItems).toEqual(direct.body.items);
		expect(new Set(shownItems.map((i) => i.contract))).toEqual(new Set(contracts));
		expect(problems).toEqual([]);
	});
});

/** Gives the test key under Authorize (Bearer), as a reader would. */
async function authorize(tab: Tab) {
	await tab.evaluate("document.querySelector('.auth-wrapper .authorize').click()");
	await tab.waitUntil("document.querySelector('#auth-bearer-value')");
	await tab.evaluate(typeInto("document.querySelector('#auth-bearer-value')", TEST_KEY));
	await tab.evaluate("document.querySelector('#auth-bearer-value').form.querySelector('.authorize').click()");
	await tab.evaluate("document.querySelector('.modal-ux .close-modal').click()");
}

/**
 * Opens the operation, presses Try it out, puts this lake's chain in place of the example chain,
 * lets `fill` set other parameters, executes; the status and body the page then shows.
 */
async function tryItOut(tab: Tab, op: string, fill?: () => Promise<void>) {
	await tab.evaluate(`${op}.querySelector('.opblock-summary-control').click()`);
	await tab.waitUntil(`${op}.querySelector('.try-out__btn')`);
	await tab.evaluate(`${op}.querySelector('.try-out__btn').click()`);
	const chainInput = `${op}.querySelector('tr[data-param-name="chain_id"] input')`;
	await tab.waitUntil(`${chainInput}?.value === 'eip155-1'`);
	await tab.evaluate(typeInto(chainInput, f.chain));
	await fill?.();
	// swagger-ui takes an input's value after a short debounce.
	await new Promise((r) => setTimeout(r, 600));
	await tab.evaluate(`${op}.querySelector('.execute').click()`);
	const status = `${op}.querySelector('.live-responses-table tr.response .response-col_status')`;
	await tab.waitUntil(status);
	return {
		status: await tab.evaluate<string>(`${status}.textContent.trim()`),
		body: await tab.evaluate<string>(`${op}.querySelector('.live-responses-table .microlight').textContent`),
	};
}
