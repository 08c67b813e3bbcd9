import { UserInputError } from "../util/errors.js";

/** A node of another chain than the one followed: one line naming both and the fix. */
export function wrongChainError(chainId: string, served: number, url?: string): UserInputError {
	const use = url ? `use --follow eip155-${served}=${url}` : `follow it as eip155-${served}`;
	return new UserInputError(
		"WRONG_CHAIN",
		`the node${url ? ` at ${url}` : ""} serves chain ${served} (eip155-${served}), not ${chainId}: ${use}, or give ${chainId} a node of that chain`,
	);
}
