import { type FSWatcher, watch } from "node:fs";
import { basename, dirname } from "node:path";
import type { Store } from "../../query/store/store.js";

/*
 * One watcher per chain and process: a timer that looks at the chain's manifest (Store.state: one
 * stat, the file re-read only when it changed) every pollMs while any feed waits, and wakes the
 * feeds whose generation is no longer the manifest's. Readers beside a writer, or over a bucket
 * whose manifest is synced into the cache folder, learn of new blocks the same way as the list
 * routes do: from the manifest file.
 *
 * Besides the timer, the manifest's folder is watched (inotify on Linux): a writer commits by
 * renaming a new manifest into place, so a feed wakes within a millisecond or two of the commit
 * instead of up to pollMs later (bench:streams measures both). The timer stays: a watch can miss
 * events or be refused (network file systems, a folder not there yet), and it re-arms the watch.
 */

export interface HeadWatcher {
	/** The chain's manifest generation now (null while it has none). */
	generation(): number | null;
	/** Resolves once the generation differs from `seen`, after `ms`, or when `signal` aborts. */
	wait(seen: number | null, ms: number, signal: AbortSignal): Promise<void>;
	/** Feeds waiting now (0 once every stream has closed). */
	waiting(): number;
	close(): void;
}

export function headWatcher(store: Store, chain: string, pollMs: number): HeadWatcher {
	const waiters = new Set<{ seen: number | null; wake: () => void }>();
	let timer: NodeJS.Timeout | undefined;
	let watcher: FSWatcher | undefined;
	const unwatch = () => {
		watcher?.close();
		watcher = undefined;
	};
	/** Watches the manifest's folder while feeds wait (best effort: the timer covers a failure). */
	const rewatch = () => {
		if (watcher) return;
		const file = store.manifestFile(chain);
		try {
			watcher = watch(dirname(file), { persistent: false }, (_event, name) => {
				if (name === basename(file)) poll();
			});
			watcher.on("error", unwatch);
		} catch {
			watcher = undefined;
		}
	};
	const generation = () => {
		try {
			return store.state(chain)?.generation ?? null;
		} catch {
			return null;
		}
	};
	const poll = () => {
		const now = generation();
		for (const w of waiters) if (w.seen !== now) w.wake();
		if (waiters.size === 0) {
			if (timer) clearInterval(timer);
			timer = undefined;
			unwatch();
		} else rewatch();
	};
	return {
		generation,
		wait(seen, ms, signal) {
			return new Promise<void>((resolve) => {
				if (signal.aborted || generation() !== seen) return resolve();
				const w = { seen, wake: () => {} };
				const t = setTimeout(() => w.wake(), ms);
				w.wake = () => {
					clearTimeout(t);
					signal.removeEventListener("abort", w.wake);
					waiters.delete(w);
					resolve();
				};
				signal.addEventListener("abort", w.wake, { once: true });
				waiters.add(w);
				timer ??= setInterval(poll, pollMs);
				rewatch();
			});
		},
		waiting: () => waiters.size,
		close() {
			for (const w of waiters) w.wake();
			if (timer) clearInterval(timer);
			timer = undefined;
			unwatch();
		},
	};
}
