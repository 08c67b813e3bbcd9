/**
 * joinedBytes (src/api/answers/send-list.ts), which writes a page of records' JSON texts into one
 * buffer: the same bytes as the string joined and encoded, whatever the texts hold.
 */
import { describe, expect, it } from "vitest";
import { joinedBytes } from "../../src/api/answers/send-list.js";

const CASES: [name: string, head: string, items: string[], sep: string, tail: string][] = [
	["no items", '{"items":[', [], ",", "]}"],
	["one item", "", ['{"a":1}'], "\n", "\n"],
	["ASCII records", '{"range":{"has_more":false},"items":[', ['{"a":1}', '{"b":"x"}', "{}"], ",", "]}"],
	// Two-, three- and four-byte characters, and a lone surrogate (written as U+FFFD, three bytes).
	["multi-byte text", "é[", ['"中文"', '"😀 emoji"', '"\ud800 lone"', '"ü"'], ", ", "]é"],
	["empty texts", "[", ["", "", ""], ",", "]"],
];

describe("joinedBytes", () => {
	it.each(CASES)("%s: the bytes of the joined string", (_name, head, items, sep, tail) => {
		const got = joinedBytes(head, items, sep, tail);
		const want = Buffer.from(head + items.join(sep) + tail);
		expect(got.length).toBe(want.length);
		expect(got.equals(want)).toBe(true);
	});

	it("a 1,000-item page comes out whole", () => {
		const items = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ n: i, pad: "x".repeat(i % 37), s: "ß" }));
		const got = joinedBytes('{"items":[', items, ",", "]}");
		expect(JSON.parse(got.toString("utf8")).items).toEqual(items.map((s) => JSON.parse(s)));
	});
});
