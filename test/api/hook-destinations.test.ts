import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
	addressProblem,
	destinationProblem,
	guardedLookup,
	parseAllowHosts,
	resolvedProblem,
} from "../../src/api/hooks/destinations.js";
import { postDelivery } from "../../src/api/hooks/post-delivery.js";

/**
 * Where webhooks may deliver (no server-side request forgery): real URL parsing and the system's
 * real resolver (`localhost` is the one name every machine resolves without a network).
 */
const PUBLIC = parseAllowHosts("public");
const problem = (url: string, policy = PUBLIC) => {
	const r = destinationProblem(url, policy);
	return "problem" in r ? r.problem : null;
};

describe("webhook destinations", () => {
	it.each([
		["ftp://example.com/x", /scheme ftp: is not allowed/],
		["file:///etc/passwd", /scheme file: is not allowed/],
		["gopher://example.com/", /scheme gopher:/],
		["javascript:alert(1)", /scheme javascript:/],
		["not a url", /not an absolute URL/],
		["http://user:pw@example.com/", /credentials/],
		["http://127.0.0.1/", /loopback/],
		["http://127.1/", /127\.0\.0\.1 is a loopback/],
		["http://0x7f.1/", /127\.0\.0\.1 is a loopback/],
		["http://2130706433/", /127\.0\.0\.1 is a loopback/],
		["http://017700000001/", /127\.0\.0\.1 is a loopback/],
		["http://0.0.0.0:8080/", /'this network'/],
		["http://10.1.2.3/", /private address \(10\.0\.0\.0\/8\)/],
		["http://172.31.255.1/", /private address \(172\.16\.0\.0\/12\)/],
		["http://192.168.1.1/", /private address \(192\.168/],
		["http://100.64.0.1/", /shared/],
		["http://169.254.169.254/latest/meta-data/", /link-local .*metadata/],
		["http://224.0.0.1/", /multicast/],
		["http://255.255.255.255/", /reserved/],
		["http://[::1]/", /loopback address \(::1\)/],
		["http://[0:0:0:0:0:0:0:1]/", /loopback address \(::1\)/],
		["http://[::]/", /unspecified/],
		["http://[::ffff:127.0.0.1]/", /loopback address \(127/],
		["http://[0:0:0:0:0:ffff:7f00:1]/", /::ffff:7f00:1 is a loopback address \(127/],
		["http://[::127.0.0.1]/", /not a global unicast/],
		["http://127.0.0.1./", /127\.0\.0\.1 is a loopback/],
		["http://0/", /0\.0\.0\.0 is a 'this network'/],
		["http://[fc00::1]/", /unique local/],
		["http://[fe80::1%25eth0]/", /not an absolute URL/],
		["http://[::ffff:169.254.169.254]/", /link-local/],
		["http://[fe80::1]/", /link-local address \(fe80/],
		["http://[fd00::1]/", /unique local/],
		["http://[64:ff9b::a9fe:a9fe]/", /NAT64/],
		["http://[2002:7f00:1::]/", /6to4/],
		["http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", /Teredo/],
		["http://[ff02::1]/", /multicast/],
	])("refuses %s", (url, why) => {
		expect(problem(url)).toMatch(why);
	});

	it("takes public addresses and names, and names the listed hosts and ranges", () => {
		expect(problem("https://93.184.215.14/in")).toBeNull();
		expect(problem("https://[2606:4700::1111]/in")).toBeNull();
		expect(problem("https://[::ffff:8.8.8.8]/in")).toBeNull();
		expect(problem("https://hooks.example.com/in")).toBeNull();
		expect(addressProblem("8.8.8.8")).toBeNull();
		const loopback = parseAllowHosts("127.0.0.1,::1");
		expect(problem("http://127.0.0.1:9000/", loopback)).toBeNull();
		expect(problem("http://[::1]:9000/", loopback)).toBeNull();
		expect(problem("http://127.0.0.2/", loopback)).toMatch(/127\.0\.0\.2 is a loopback address.*does not list it/);
		// Without `public`, only what is listed: with names alone, another name is refused before any lookup
		// (with ranges, a name is looked up: it may resolve into one).
		expect(problem("https://hooks.example.com/", parseAllowHosts("hooks.corp"))).toMatch(
			/not listed in the server's --hook-allow-hosts \(hooks.corp\)/,
		);
		expect(problem("http://8.8.8.8/", loopback)).toMatch(/not listed/);
		const ranges = parseAllowHosts("public,10.0.0.0/8,*.internal.example,hooks.corp");
		expect(problem("http://10.9.9.9/", ranges)).toBeNull();
		expect(problem("http://192.168.0.1/", ranges)).toMatch(/private/);
		expect(problem("http://a.internal.example/", ranges)).toBeNull();
		expect(problem("http://hooks.corp/", ranges)).toBeNull();
	});

	it("refuses a flag it cannot read, naming the entry", () => {
		expect(() => parseAllowHosts("public,10.0.0.0/40")).toThrow(/10\.0\.0\.0\/40 is not an address range/);
		expect(() => parseAllowHosts("http://x")).toThrow(/http:\/\/x is neither/);
	});

	it("checks the addresses a name resolves to, when a hook is made and at every connection", async () => {
		// localhost resolves to loopback: refused by name as it would be by address.
		expect(await resolvedProblem(new URL("http://localhost:9/"), PUBLIC)).toMatch(
			/localhost resolves to .* loopback address/,
		);
		expect(await resolvedProblem(new URL("http://localhost:9/"), parseAllowHosts("127.0.0.1,::1"))).toBeNull();
		expect(await resolvedProblem(new URL("http://no-such-host.invalid/"), PUBLIC)).toMatch(/does not resolve/);
		const refused = await new Promise<NodeJS.ErrnoException | null>((resolve) =>
			guardedLookup(PUBLIC)("localhost", { all: false }, (err) => resolve(err)),
		);
		expect(refused?.code).toBe("EHOOKREFUSED");
		const allowed = await new Promise<string | unknown>((resolve) =>
			guardedLookup(parseAllowHosts("localhost"))("localhost", { all: false }, (_err, address) => resolve(address)),
		);
		expect(String(allowed)).toMatch(/^(127\.0\.0\.1|::1)$/);
	});
});

/**
 * One delivery attempt (post-delivery.ts) against receivers that misbehave, real sockets on
 * loopback: it ends within its deadline and reads a bounded answer, whatever the receiver does.
 */
describe("a delivery attempt against a hostile receiver", () => {
	const LOOPBACK = parseAllowHosts("127.0.0.1");
	let server: Server;
	let port = 0;
	let requests = 0;
	/** Bytes /huge managed to write before its client let go. */
	let hugeWritten = 0;
	beforeAll(async () => {
		server = createServer((req, res) => {
			requests++;
			req.resume();
			if (req.url === "/hang") return; // never answers
			if (req.url === "/trickle") {
				res.writeHead(200);
				const t = setInterval(() => res.write("."), 50);
				res.on("close", () => clearInterval(t));
				return;
			}
			if (req.url === "/cut") {
				res.writeHead(500, { "content-length": "100" });
				res.write("0123456789");
				setTimeout(() => res.destroy(), 20);
				return;
			}
			if (req.url === "/huge") {
				res.writeHead(200);
				const chunk = Buffer.alloc(64 * 1024, 120);
				const pump = () => {
					while (hugeWritten < 64 * 2 ** 20 && !res.destroyed) {
						hugeWritten += chunk.length;
						if (!res.write(chunk)) return void res.once("drain", pump);
					}
					res.end();
				};
				return pump();
			}
			res.writeHead(204).end();
		});
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
		port = (server.address() as AddressInfo).port;
	});
	afterAll(async () => {
		server.closeAllConnections();
		await new Promise((r) => server.close(r));
	});
	const post = (path: string, policy = LOOPBACK, host = "127.0.0.1") =>
		postDelivery(
			{ id: "0123456789abcdef", url: `http://${host}:${port}${path}`, secret: "s".repeat(16) },
			"{}",
			policy,
			400,
		);

	it("fails a receiver that hangs at the deadline, and takes a 2xx at its status line (the body never awaited)", async () => {
		expect(await post("/hang")).toEqual({ ok: false, error: "no answer within 400 ms" });
		// 200, then a body that never ends: acknowledged (it failed at the deadline, and was sent again forever).
		expect(await post("/trickle")).toEqual({ ok: true, status: 200 });
	});

	it("reads a huge answer only so far, and takes a cut answer's status", async () => {
		expect(await post("/huge")).toEqual({ ok: true, status: 200 });
		expect(hugeWritten).toBeLessThan(64 * 2 ** 20);
		expect(await post("/cut")).toMatchObject({ ok: false, error: "HTTP 500 from the destination" });
	});

	it("connects to a name only through the checked lookup (a name that resolves to loopback now fails)", async () => {
		const before = requests;
		const r = await post("/in", PUBLIC, "localhost");
		expect(r).toMatchObject({
			ok: false,
			error: expect.stringMatching(/^destination refused: localhost resolves to .*loopback/),
		});
		expect(requests).toBe(before);
	});
});
