import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { errorBody } from "./errors.js";

const ANSWERS: Record<string, [number, string, string]> = {
	ERR_HTTP_REQUEST_TIMEOUT: [
		408,
		"REQUEST_TIMEOUT",
		"the request did not arrive in time: send the whole request at once, then wait for the answer",
	],
	HPE_HEADER_OVERFLOW: [431, "HEADERS_TOO_LARGE", "the request headers are too large: send fewer or shorter headers"],
};

/**
 * Answers what Node's HTTP parser rejects before Fastify sees a request: a slow client past its
 * deadline (408), oversized headers (431), malformed HTTP (400). Fastify's default handler logs
 * the error object, whose `rawPacket` holds the raw request bytes, Authorization header included;
 * this one logs only the error's code. Fastify calls it with the app as `this`.
 */
export function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Socket) {
	if (err.code === "ECONNRESET" || socket.destroyed) return;
	const [status, code, message] = ANSWERS[err.code ?? ""] ?? [
		400,
		"MALFORMED_REQUEST",
		"the request is not valid HTTP/1.1: check the request line and headers",
	];
	this.log.debug({ code: err.code ?? "unknown", status }, "client connection error");
	if (socket.writable) {
		const body = JSON.stringify(errorBody(status, code, message));
		socket.write(
			`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
		);
	}
	socket.destroy();
}
