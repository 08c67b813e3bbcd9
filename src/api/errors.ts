/** An error a client can act on: the status, a stable code, and a message saying how to fix it. */
export class ApiError extends Error {
	constructor(
		readonly statusCode: 400 | 401 | 404 | 406 | 429 | 503,
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
	404: "Not Found",
	405: "Method Not Allowed",
	406: "Not Acceptable",
	413: "Payload Too Large",
	415: "Unsupported Media Type",
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
