import type { Params } from "./store/store.js";

/**
 * Condition builders shared by the query modules. They return fixed SQL text with named
 * placeholders and put every value into `params`: no value ever becomes SQL text.
 */

/** `column IN ($name0, $name1, ...)` for a list of values. */
export function inList(column: string, name: string, values: readonly string[], params: Params): string {
	values.forEach((v, i) => {
		params[`${name}${i}`] = v;
	});
	return `${column} IN (${values.map((_, i) => `$${name}${i}`).join(", ")})`;
}

/**
 * An address on one side of a two-sided record (sender/recipient, from/to): `outgoing` = it
 * sent, `incoming` = it received, neither = either side; `counterparty` = the other side.
 */
export function sideConditions(
	[fromColumn, toColumn]: readonly [string, string],
	f: { address: string; direction?: "incoming" | "outgoing"; counterparty?: string },
	params: Params,
): string[] {
	params.address = f.address;
	const mine =
		f.direction === "outgoing"
			? `${fromColumn} = $address`
			: f.direction === "incoming"
				? `${toColumn} = $address`
				: `(${fromColumn} = $address OR ${toColumn} = $address)`;
	if (!f.counterparty) return [mine];
	params.counterparty = f.counterparty;
	const theirs =
		f.direction === "outgoing"
			? `${toColumn} = $counterparty`
			: f.direction === "incoming"
				? `${fromColumn} = $counterparty`
				: `((${fromColumn} = $address AND ${toColumn} = $counterparty) OR (${toColumn} = $address AND ${fromColumn} = $counterparty))`;
	return [mine, theirs];
}
