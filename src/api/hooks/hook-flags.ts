import { DEFAULT_ALLOW_HOSTS, type HostPolicy, parseAllowHosts } from "./destinations.js";
import { DEFAULT_DELIVERY } from "./hook-worker.js";

/** The webhook flags of serve (README "Webhooks"); each has an environment twin. */
export const HOOK_FLAG_OPTIONS = {
	"hook-allow-hosts": { type: "string", default: process.env.CHAINLAKE_HOOK_ALLOW_HOSTS ?? DEFAULT_ALLOW_HOSTS },
	"hook-timeout-ms": {
		type: "string",
		default: process.env.CHAINLAKE_HOOK_TIMEOUT_MS || String(DEFAULT_DELIVERY.timeoutMs),
	},
	"hook-max-backoff-ms": {
		type: "string",
		default: process.env.CHAINLAKE_HOOK_MAX_BACKOFF_MS || String(DEFAULT_DELIVERY.maxBackoffMs),
	},
} as const;

export const HOOK_USAGE = `--hook-allow-hosts <list> where webhooks may deliver (CHAINLAKE_HOOK_ALLOW_HOSTS; default public):
                            public, host names, *.domain, addresses, ranges (10.0.0.0/8), comma-separated
  --hook-timeout-ms <n>     a delivery's deadline (CHAINLAKE_HOOK_TIMEOUT_MS; default ${DEFAULT_DELIVERY.timeoutMs})
  --hook-max-backoff-ms <n> the longest wait between attempts at a failing hook (CHAINLAKE_HOOK_MAX_BACKOFF_MS;
                            default ${DEFAULT_DELIVERY.maxBackoffMs})`;

/** The settings from the flags; throws an Error naming the flag to fix. */
export function hookFlags(values: Record<string, unknown>): {
	policy: HostPolicy;
	timeoutMs: number;
	maxBackoffMs: number;
} {
	const whole = (flag: string, min: number, max: number) => {
		const text = String(values[flag] ?? "");
		const n = Number(text);
		if (!/^\d{1,10}$/.test(text) || n < min || n > max)
			throw new Error(
				`--${flag} must be a whole number of milliseconds from ${min} to ${max}, not ${JSON.stringify(text)}`,
			);
		return n;
	};
	return {
		policy: parseAllowHosts(String(values["hook-allow-hosts"] ?? "")),
		timeoutMs: whole("hook-timeout-ms", 100, 300_000),
		maxBackoffMs: whole("hook-max-backoff-ms", 100, 86_400_000),
	};
}
