import type { LakeSettings, Manifest } from "../format/records.js";
import { MIN_RETENTION_MINUTES } from "./lake-export.js";

/**
 * The Delta Lake export's flags, shared by every writer (backfill, follow, reindex, synth). What
 * a writer is given is stored in the manifest (`lake`), so the next writer keeps it without
 * being told again.
 */
export const LAKE_FLAG_OPTIONS = {
	delta: { type: "string" },
	"delta-retention-minutes": { type: "string" },
	"delta-final-only": { type: "string" },
} as const;

export const LAKE_USAGE = "[--delta on|off] [--delta-retention-minutes 360] [--delta-final-only false|true]";

/** The settings the flags give (none given: {}); throws an Error naming the flag to fix. */
export function lakeFlags(values: Record<string, unknown>): Partial<LakeSettings> {
	const out: Partial<LakeSettings> = {};
	const onOff = (flag: string, v: unknown, yes: string, no: string): boolean => {
		if (v === yes) return true;
		if (v === no) return false;
		throw new Error(`--${flag} must be ${yes} or ${no}, not ${JSON.stringify(v)}`);
	};
	if (values.delta !== undefined) out.delta = onOff("delta", values.delta, "on", "off");
	if (values["delta-final-only"] !== undefined)
		out.final_only = onOff("delta-final-only", values["delta-final-only"], "true", "false");
	const retention = values["delta-retention-minutes"];
	if (retention !== undefined) {
		const n = Number(retention);
		if (!/^\d{1,7}$/.test(String(retention)) || n < MIN_RETENTION_MINUTES)
			throw new Error(
				`--delta-retention-minutes must be a whole number of minutes, at least ${MIN_RETENTION_MINUTES} (API readers need replaced files that long), not ${JSON.stringify(retention)}`,
			);
		out.retention_minutes = n;
	}
	return out;
}

/** Records the flags in the manifest; true when that changed it (the writer then saves it at once). */
export function applyLakeFlags(m: Manifest, flags: Partial<LakeSettings>): boolean {
	const lake = { ...m.lake, ...flags };
	if (JSON.stringify(lake) === JSON.stringify(m.lake ?? {})) return false;
	m.lake = lake;
	return true;
}
