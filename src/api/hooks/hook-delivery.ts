import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { acquireWriteLock, DataDirLockedError } from "../../store/files/lock.js";
import { errorSummary } from "../errors.js";
import { freshState, type HookDef, hooksDir, listHooks, readState, removeState, writeState } from "./hook-files.js";
import { type DeliveryOptions, runHook } from "./hook-worker.js";

/*
 * Who delivers: one process per chain, the one holding `<data>/<chain>/_hooks/_lock` (the same
 * kind of OS lock as a chain's write lock, store/files/lock.ts: the kernel drops it however the
 * holder dies). Every `npm run serve` process tries to take it every poll; the first takes it and
 * delivers every hook of the chain, the others stand by and take over within a poll of its death.
 * A hook made, replayed or deleted through any process is seen at the next poll.
 */

export interface HookDeliveryOptions extends DeliveryOptions {
	dataDir: string;
	/** The chains served now (a follower may add one while this runs). */
	chains: () => string[];
	/** Whether the key of this SHA-256 (hex) is still valid: a revoked key's hooks pause. */
	ownerValid: (owner: string) => boolean;
	pollMs: number;
}

interface Worker {
	generation: number;
	abort: AbortController;
	done: Promise<void>;
	finished: boolean;
}

/**
 * Temporary files a crash left (hook-files.ts writes `<file>.<pid>.<random>.tmp`, then renames
 * it): a previous deliverer's states when the lock is taken (`states`), and at every poll any
 * older than a minute (a write takes milliseconds; an API process that crashed mid-write may
 * have left one at any time, not only before this process took the lock).
 */
function removeStaleTemps(dir: string, states: boolean) {
	for (const name of readdirSync(dir)) {
		if (!name.endsWith(".tmp")) continue;
		const path = join(dir, name);
		try {
			if (Date.now() - statSync(path).mtimeMs > 60_000 || (states && name.includes(".state.json.")))
				rmSync(path, { force: true });
		} catch {}
	}
}

export function startHookDelivery(app: FastifyInstance, opts: HookDeliveryOptions) {
	const locks = new Map<string, () => void>();
	const workers = new Map<string, Worker>();
	let stopped = false;
	let timer: NodeJS.Timeout | null = null;
	let current: Promise<void> = Promise.resolve();

	const start = (def: HookDef) => {
		if (stopped) return;
		const abort = new AbortController();
		const worker: Worker = { generation: def.generation, abort, finished: false, done: Promise.resolve() };
		worker.done = runHook(app, opts.dataDir, def, opts, abort.signal)
			.catch((err) => opts.log.warn(`webhook ${def.id} of ${def.chain} stopped: ${errorSummary(err).detail}`))
			.finally(() => {
				worker.finished = true;
			});
		workers.set(`${def.chain}/${def.id}`, worker);
	};

	const pause = async (def: HookDef) => {
		const stored = readState(opts.dataDir, def.chain, def.id);
		const state = stored && stored.generation === def.generation ? stored : freshState(def);
		if (state.status === "paused") return;
		await writeState(opts.dataDir, def.chain, def.id, {
			...state,
			status: "paused",
			last_error: "the API key that made this hook is revoked or unknown: deliveries wait until it is valid again",
			last_error_at: new Date().toISOString(),
			next_attempt_at: null,
			updated_at: new Date().toISOString(),
		});
	};

	const tickChain = async (chain: string) => {
		// Hooks whose file cannot be read now are not deleted ones: their workers and states stay.
		const unreadable = new Set<string>();
		const defs = listHooks(opts.dataDir, chain, unreadable);
		if (!locks.has(chain)) {
			if (defs.length === 0) return;
			try {
				locks.set(chain, await acquireWriteLock(hooksDir(opts.dataDir, chain)));
				removeStaleTemps(hooksDir(opts.dataDir, chain), true);
				opts.log.info(`this process delivers the webhooks of ${chain} (pid ${process.pid})`);
			} catch (err) {
				if (err instanceof DataDirLockedError) return; // another process delivers them
				throw err;
			}
		} else removeStaleTemps(hooksDir(opts.dataDir, chain), false);
		for (const id of unreadable)
			opts.log.warn(`webhook ${id} of ${chain}: its file cannot be read now; kept as it was`);
		const byId = new Map(defs.map((d) => [d.id, d]));
		for (const [key, w] of workers) {
			const [c, id] = key.split("/") as [string, string];
			if (c !== chain || unreadable.has(id)) continue;
			const def = byId.get(id);
			if (def && def.generation === w.generation && opts.ownerValid(def.owner) && !(w.finished && !done(def))) continue;
			w.abort.abort();
			await w.done;
			workers.delete(key);
		}
		for (const def of defs) {
			if (workers.has(`${chain}/${def.id}`)) continue;
			if (!opts.ownerValid(def.owner)) await pause(def);
			else start(def);
		}
		// States whose hook was deleted (DELETE removes both; a worker may have written one since).
		for (const name of readdirSync(hooksDir(opts.dataDir, chain))) {
			const id = /^([0-9a-f]{16})\.state\.json$/.exec(name)?.[1];
			if (id && !byId.has(id) && !unreadable.has(id) && !workers.has(`${chain}/${id}`))
				removeState(opts.dataDir, chain, id);
		}
	};

	/** A finished worker stays (its hook is done) only when its state says completed. */
	const done = (def: HookDef) => readState(opts.dataDir, def.chain, def.id)?.status === "completed";

	const tick = async () => {
		for (const chain of stopped ? [] : opts.chains()) {
			try {
				await tickChain(chain);
			} catch (err) {
				opts.log.warn(`webhooks of ${chain}: ${errorSummary(err).detail}`);
			}
		}
		if (!stopped)
			timer = setTimeout(() => {
				current = tick();
			}, opts.pollMs);
	};
	current = tick();

	return {
		/** Whether this process delivers the chain's hooks now. */
		delivering: (chain: string) => locks.has(chain),
		async stop() {
			stopped = true;
			if (timer) clearTimeout(timer);
			await current;
			for (const w of workers.values()) w.abort.abort();
			await Promise.all([...workers.values()].map((w) => w.done));
			workers.clear();
			for (const release of locks.values()) release();
			locks.clear();
		},
	};
}

export type HookDelivery = ReturnType<typeof startHookDelivery>;
