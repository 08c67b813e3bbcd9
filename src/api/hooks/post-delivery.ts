import { createHmac } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { destinationProblem, guardedLookup, type HostPolicy } from "./destinations.js";

/*
 * One delivery attempt: a signed POST of a batch to the hook's URL. Success is a 2xx and nothing
 * else: a redirect is not followed (it could lead anywhere, past the destination checks), and a
 * timeout, a refused connection or a refused destination are failures like a 500.
 */

export const SIGNATURE_HEADER = "x-chainlake-signature";
export const TIMESTAMP_HEADER = "x-chainlake-timestamp";
export const HOOK_ID_HEADER = "x-chainlake-hook-id";

/** `sha256=` and the hex HMAC-SHA256 of `<timestamp>.<body>` with the hook's secret. */
export function signature(secret: string, timestamp: string, body: string): string {
	return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

export type DeliveryResult = { ok: true; status: number } | { ok: false; error: string };

export function postDelivery(
	target: { id: string; url: string; secret: string },
	body: string,
	policy: HostPolicy,
	timeoutMs: number,
	/** Ends the attempt at once (the hook deleted or replayed, the process stopping): no wait for its deadline. */
	signal?: AbortSignal,
): Promise<DeliveryResult> {
	const checked = destinationProblem(target.url, policy);
	if ("problem" in checked) return Promise.resolve({ ok: false, error: `destination refused: ${checked.problem}` });
	const url = checked.url;
	const timestamp = String(Math.floor(Date.now() / 1000));
	const request = url.protocol === "https:" ? httpsRequest : httpRequest;
	return new Promise((resolve) => {
		let settled = false;
		const done = (r: DeliveryResult) => {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			resolve(r);
		};
		const req = request(
			url,
			{
				method: "POST",
				// A fresh connection per attempt: each is looked up (and checked) again.
				agent: false,
				signal,
				lookup: guardedLookup(policy) as never,
				headers: {
					"content-type": "application/json",
					"content-length": Buffer.byteLength(body),
					"user-agent": "chainlake-hooks/1",
					[HOOK_ID_HEADER]: target.id,
					[TIMESTAMP_HEADER]: timestamp,
					[SIGNATURE_HEADER]: signature(target.secret, timestamp, body),
				},
			},
			(res) => {
				// The status line is the receiver's answer: judged at once, the body never read (it
				// is dropped anyway). Waiting for its end let a receiver that answered 200 but kept
				// writing (or holding) its body fail every batch at the deadline, and be sent it again.
				const status = res.statusCode ?? 0;
				res.destroy();
				if (status >= 200 && status < 300) return done({ ok: true, status });
				if (status >= 300 && status < 400)
					return done({
						ok: false,
						error: `HTTP ${status}: redirects are not followed; give the hook the final URL`,
					});
				done({ ok: false, error: `HTTP ${status} from the destination` });
			},
		);
		const timer = setTimeout(() => {
			done({ ok: false, error: `no answer within ${timeoutMs} ms` });
			req.destroy();
		}, timeoutMs);
		req.on("error", (err: NodeJS.ErrnoException) =>
			done({
				ok: false,
				error:
					err.code === "EHOOKREFUSED"
						? `destination refused: ${err.message}`
						: err.name === "AbortError"
							? "the attempt was stopped (the hook deleted or replayed, or the server stopping)"
							: `connection failed: ${err.code ?? err.message}`,
			}),
		);
		req.end(body);
	});
}
