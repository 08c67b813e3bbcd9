/**
 * Errors split by what the caller can do about them: fix the input (UserInputError),
 * retry later (retryable), or give up (everything else). Every error carries a stable code.
 */
export class ChainlakeError extends Error {
	readonly code: string;
	readonly retryable: boolean;

	constructor(code: string, message: string, opts: { cause?: unknown; retryable?: boolean } = {}) {
		super(message, { cause: opts.cause });
		this.name = "ChainlakeError";
		this.code = code;
		this.retryable = opts.retryable ?? false;
	}
}

/** Bad flags or arguments: the message says what was wrong and how to fix it. */
export class UserInputError extends ChainlakeError {
	constructor(code: string, message: string) {
		super(code, message);
		this.name = "UserInputError";
	}
}

/** The node answered something that contradicts itself or the data already stored. */
export class ConsistencyError extends ChainlakeError {
	constructor(message: string, opts: { retryable?: boolean } = {}) {
		super("INCONSISTENT_DATA", message, opts);
		this.name = "ConsistencyError";
	}
}
