/**
 * Answers memoised per manifest (Snapshot.memo): apart from the store because the rule is its own
 * (a changed manifest is a new object, so its answers start afresh and the old ones are collected
 * with it) and nothing else shares its state.
 */
import type { Manifest } from "../../store/format/records.js";

export function manifestMemo() {
	// Memoised answers per manifest object: a changed manifest is a new object, so its answers
	// start afresh, and the old ones are collected with it.
	const memos = new WeakMap<Manifest, Map<string, Promise<unknown>>>();
	const memo = <T>(manifest: Manifest | null, key: string, compute: () => Promise<T>): Promise<T> => {
		if (!manifest) return compute();
		let m = memos.get(manifest);
		if (!m) {
			m = new Map();
			memos.set(manifest, m);
		}
		const memoised = m;
		let p = memoised.get(key) as Promise<T> | undefined;
		if (!p) {
			p = compute();
			memoised.set(key, p);
			p.catch(() => memoised.delete(key));
		}
		return p;
	};
	return memo;
}
