/**
 * A query the store interrupted because it ran past its time budget (`queryTimeoutMs` of
 * createStore). It is the request's size, not a fault: the API answers 503 QUERY_TIMEOUT and
 * tells the client to ask for less (a narrower range, a lower limit, more filters).
 */
export class QueryTimeoutError extends Error {
	readonly code = "QUERY_TIMEOUT";

	constructor(readonly budgetMs: number) {
		super(`the query ran past its ${budgetMs} ms budget and was stopped`);
		this.name = "QueryTimeoutError";
	}
}
