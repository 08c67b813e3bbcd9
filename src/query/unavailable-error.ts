/**
 * The service cannot answer now, through no fault of the request: the process is too busy to
 * start the request's next query while its files are surely still there (SNAPSHOT_MAX_AGE_MS in
 * store.ts), or the bucket a reader fetches the lake's files from did not answer. The API says
 * 503 with the code and the message, which tells the client to retry.
 */
export class UnavailableError extends Error {
	constructor(
		readonly code: "BUSY" | "LAKE_UNREACHABLE",
		message: string,
	) {
		super(message);
		this.name = "UnavailableError";
	}
}
