/** An error a client can act on: the status, a stable code, and a message saying how to fix it. */
export class ApiError extends Error {
	constructor(
		readonly statusCode: 400 | 401 | 403 | 404 | 406 | 429 | 503,
		readonly code: string,
		message: string,
	) {
		super(message);
		this.name = "ApiError";
	}
}

const REASONS: Record<number, string> = {
	400: "Bad Request",
	401: "Unauthorized",
	403: "Forbidden",
	404: "Not Found",
	405: "Method Not Allowed",
	406: "Not Acceptable",
	408: "Request Timeout",
	413: "Payload Too Large",
	415: "Unsupported Media Type",
	431: "Request Header Fields Too Large",
	429: "Too Many Requests",
	500: "Internal Server Error",
	503: "Service Unavailable",
};

/** The error body of api-contract.md §3. */
export function errorBody(statusCode: number, code: string, message: string) {
	return { statusCode, error: REASONS[statusCode] ?? "Error", code, message };
}

export const badRequest = (code: string, message: string) => new ApiError(400, code, message);
export const notFound = (code: string, message: string) => new ApiError(404, code, message);

/**
 * What the log keeps of an unexpected error: its class, its code and the first line of its
 * message with quoted text and anything path-like cut out. Not the stack, nor the rest of the
 * message: DuckDB errors quote the SQL, and both name the data folder's files.
 */
export function errorSummary(err: unknown): { type: string; code?: string; detail: string } {
	const e = (err ?? {}) as { name?: unknown; code?: unknown; message?: unknown };
	const line = String(e.message ?? "").split("\n")[0] ?? "";
	const detail = line
		.replace(/(["'`]).*?(\1|$)/g, "…")
		.replace(/(?:[A-Za-z]:)?[\\/][^\s,;)\]]*/g, "<path>")
		.replace(/\b(SELECT|FROM|WHERE|read_parquet)\b.*$/i, "…")
		.slice(0, 160);
	return {
		type: typeof e.name === "string" ? e.name : typeof err,
		code: typeof e.code === "string" ? e.code : undefined,
		detail,
	};
}
