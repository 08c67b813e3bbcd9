import type { FastifyInstance } from "fastify";
import type { Logger } from "../../util/logger.js";
import { HOOK_OWNER_HEADER } from "../auth.js";
import { type FeedEvent, openFeed } from "../live/feed.js";
import type { HostPolicy } from "./destinations.js";
import { freshState, type HookDef, type HookState, readHook, readState, writeState } from "./hook-files.js";
import { postDelivery } from "./post-delivery.js";

/*
 * One hook's deliveries: its feed from the durable cursor, in batches, each POSTed until a 2xx
 * (with capped exponential backoff in between), and only then the cursor moved past it and
 * written to disk. So a crash at any moment resends at most the batch not yet acknowledged, and
 * loses nothing: the feed starts again right after the last acknowledged event.
 */

export interface DeliveryOptions {
	policy: HostPolicy;
	/** One attempt's deadline (connect, send, answer). */
	timeoutMs: number;
	/** The wait after the first failed attempt; it doubles with each failure up to maxBackoffMs. */
	backoffMs: number;
	maxBackoffMs: number;
	/** Events per POST at most. */
	maxBatch: number;
	/** How long a batch waits for more events before it is sent (a head event sends it at once). */
	lingerMs: number;
	/** The API's base path (serve --base-path), which the feed's in-process page requests need before a hook's path. */
	basePath?: string;
	log: Pick<Logger, "info" | "warn">;
}

export const DEFAULT_DELIVERY = {
	timeoutMs: 10_000,
	backoffMs: 1_000,
	maxBackoffMs: 600_000,
	maxBatch: 100,
	lingerMs: 200,
};

type Delivered = Extract<FeedEvent, { type: "item" | "reorg" }>;

/**
 * The query the feed runs: the hook's, started at from_block when one is set (a replay sets one),
 * then to the query's block_number_end, or live (`latest`: the list routes take both ends or none).
 */
export function feedQuery(def: HookDef): Record<string, string> {
	if (def.from_block === null) return def.query;
	return { block_number_end: "latest", ...def.query, block_number_start: String(def.from_block) };
}

/**
 * A delivery's body. Items go as the list route wrote them (the feed's `text`): JSON.stringify of
 * the parsed item would round integers past 2^53.
 */
export function batchBody(def: HookDef, batch: Delivered[]): string {
	const events = batch.map((e) =>
		e.type === "item"
			? `{"type":"item","id":${JSON.stringify(e.id)},"block_number":${e.block_number},"item":${e.text}}`
			: JSON.stringify({ type: e.type, id: e.id, block_number: e.block_number, block_hash: e.block_hash }),
	);
	const last = batch[batch.length - 1] as Delivered;
	return `{"hook_id":${JSON.stringify(def.id)},"chain":${JSON.stringify(def.chain)},"cursor":${JSON.stringify(last.id)},"events":[${events.join(",")}]}`;
}

const TIMEOUT = Symbol("timeout");
const ABORTED = Symbol("aborted");

/** `p`, or TIMEOUT after `ms` (never when null), or ABORTED when `signal` aborts first. */
function race<T>(p: Promise<T>, ms: number | null, signal: AbortSignal): Promise<T | typeof TIMEOUT | typeof ABORTED> {
	return new Promise((resolve, reject) => {
		if (signal.aborted) return resolve(ABORTED);
		const timer = ms === null ? null : setTimeout(() => finish(TIMEOUT), ms);
		const onAbort = () => finish(ABORTED);
		const finish = (v: T | typeof TIMEOUT | typeof ABORTED) => {
			if (timer) clearTimeout(timer);
			signal.removeEventListener("abort", onAbort);
			resolve(v);
		};
		signal.addEventListener("abort", onAbort);
		p.then(finish, (err) => {
			if (timer) clearTimeout(timer);
			signal.removeEventListener("abort", onAbort);
			reject(err);
		});
	});
}

/** Whether the hook is still there as this worker knows it (not deleted, not replayed); a read that fails counts as yes. */
function stillCurrent(dataDir: string, def: HookDef): boolean {
	try {
		return readHook(dataDir, def.chain, def.id)?.generation === def.generation;
	} catch {
		return true;
	}
}

const sleep = (ms: number, signal: AbortSignal) => race(new Promise((r) => setTimeout(r, ms)), null, signal);

/** Runs one hook until `signal` aborts (deleted, replayed, stopping) or its range end is delivered. */
export async function runHook(
	app: FastifyInstance,
	dataDir: string,
	def: HookDef,
	opts: DeliveryOptions,
	signal: AbortSignal,
): Promise<void> {
	let state: HookState = readState(dataDir, def.chain, def.id) ?? freshState(def);
	if (state.generation !== def.generation) state = freshState(def);
	// Paused while its key was revoked: the key is valid again (or this would not run).
	if (state.status === "paused") state = { ...state, status: "active", next_attempt_at: null };
	const save = async (change: Partial<HookState>) => {
		state = { ...state, ...change, updated_at: new Date().toISOString() };
		await writeState(dataDir, def.chain, def.id, state);
	};
	await save({});
	const backoff = (attempts: number) => Math.min(opts.maxBackoffMs, opts.backoffMs * 2 ** Math.min(attempts - 1, 30));
	/** A failure (of the destination, or of the feed): marked failing, then the backoff's wait. */
	const failed = async (error: string) => {
		const attempts = state.attempts + 1;
		const wait = backoff(attempts);
		const now = new Date();
		await save({
			status: "failing",
			attempts,
			last_error: error,
			last_error_at: now.toISOString(),
			failing_since: state.failing_since ?? now.toISOString(),
			next_attempt_at: new Date(now.getTime() + wait).toISOString(),
		});
		opts.log.warn(`webhook ${def.id} of ${def.chain}: ${error}; attempt ${attempts + 1} in ${wait} ms`);
		await sleep(wait, signal);
	};

	/** POSTs the batch until a 2xx, then moves the durable cursor past it. False when aborted first. */
	const deliver = async (batch: Delivered[]): Promise<boolean> => {
		const last = batch[batch.length - 1] as Delivered;
		const body = batchBody(def, batch);
		while (!signal.aborted) {
			// Deleted or replayed since this worker started: the deliverer's poll would stop it within
			// a second, but a backlog goes out in many batches a second, so each attempt looks first
			// (one small file read): after DELETE's 204 at most the batch already under way arrives.
			if (!stillCurrent(dataDir, def)) return false;
			const r = await postDelivery(def, body, opts.policy, opts.timeoutMs, signal);
			if (signal.aborted) return false;
			if (r.ok) {
				await save({
					status: "active",
					cursor: last.id,
					last_delivered_block: last.block_number,
					last_delivered_at: new Date().toISOString(),
					delivered_events: state.delivered_events + batch.length,
					attempts: 0,
					failing_since: null,
					next_attempt_at: null,
				});
				return true;
			}
			await failed(r.error);
		}
		return false;
	};

	while (!signal.aborted && state.status !== "completed") {
		const feedAbort = new AbortController();
		const stopFeed = () => feedAbort.abort();
		signal.addEventListener("abort", stopFeed);
		try {
			const events = openFeed(
				app,
				{
					chain: def.chain,
					path: `${opts.basePath ?? ""}${def.path}`,
					query: feedQuery(def),
					headers: { [HOOK_OWNER_HEADER]: def.owner },
					cursor: state.cursor ?? undefined,
					confirmations: def.confirmations,
				},
				feedAbort.signal,
			)[Symbol.asyncIterator]();
			let pending: Promise<IteratorResult<FeedEvent>> | null = null;
			let batch: Delivered[] = [];
			const flush = async () => {
				const ok = batch.length === 0 || (await deliver(batch));
				batch = [];
				return ok;
			};
			for (;;) {
				const next: Promise<IteratorResult<FeedEvent>> = pending ?? events.next();
				pending = next;
				const r = await race(next, batch.length > 0 ? opts.lingerMs : null, signal);
				if (r === ABORTED) return;
				if (r === TIMEOUT) {
					if (!(await flush())) return;
					continue;
				}
				pending = null;
				if (r.done) {
					// The feed stopped without its end event: deliver what came, then open it again from the cursor.
					if (!(await flush()) || (await sleep(opts.lingerMs * 5, signal)) === ABORTED) return;
					break;
				}
				const e = r.value;
				if (e.type === "item" || e.type === "reorg") {
					batch.push(e);
					if (batch.length >= opts.maxBatch && !(await flush())) return;
				} else if (e.type === "head") {
					// Caught up with the stored head: what is gathered goes now.
					if (!(await flush())) return;
				} else if (e.type === "end") {
					if (!(await flush())) return;
					await save({ status: "completed", next_attempt_at: null });
					return;
				}
			}
		} catch (err) {
			if (signal.aborted) return;
			await failed(`the feed failed: ${(err as Error).message}`);
		} finally {
			feedAbort.abort();
			signal.removeEventListener("abort", stopFeed);
		}
	}
}
