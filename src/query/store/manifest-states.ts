/**
 * Each chain's manifest as the store reads it, re-read only when the file changed (one stat per
 * request), or what is wrong with it: apart from the rest of the store because every part of it
 * (snapshots, damage, HTTP caching) starts from here.
 */
import { statSync } from "node:fs";
import { manifestPath } from "../../store/format/layout.js";
import { readManifestChecked } from "../../store/format/manifest.js";
import type { Manifest } from "../../store/format/records.js";
import { DamagedDataError, manifestDamagedMessage } from "../damaged-data-error.js";

/**
 * What changes with every save of a manifest file, from one stat: its inode (a save renames a new
 * file into place), its ctime and mtime (to the nanosecond the filesystem keeps) and its size. One
 * system call per request instead of the five it took to also read the generation from the
 * file's first bytes (issue 26: synchronous file-system calls were 16% of a request's JS); "none"
 * while there is no manifest.
 */
function stampOf(path: string): string {
	const st = statSync(path, { bigint: true, throwIfNoEntry: false });
	return st ? `${st.ino}:${st.ctimeNs}:${st.mtimeNs}:${st.size}` : "none";
}

export type ManifestState = { stamp: string; manifest: Manifest | null; problem: string | null };

export interface ManifestStates {
	/** The chain's manifest as of now (re-read if its file changed), or what is wrong with it. */
	manifestState(chain: string): ManifestState;
	/** The chain's manifest, or null while there is none or it is damaged. */
	manifestOf(chain: string): Manifest | null;
	/** The chain's manifest for a snapshot: fails with MANIFEST_DAMAGED when it is damaged. */
	snapshotOf(chain: string): Manifest | null;
}

/** `sweep`: called with each manifest newly read, to check its files in the background (file-health.ts). */
export function manifestStates(dataDir: string, sweep: (chain: string, manifest: Manifest) => unknown): ManifestStates {
	// The manifest of each chain, re-read when it changes (a backfill appended ranges), or what is
	// wrong with it. Each new one's files are checked in the background (see damage()).
	const manifests = new Map<string, ManifestState>();
	const manifestState = (chain: string) => {
		const path = manifestPath(dataDir, chain);
		const stamp = stampOf(path);
		const cached = manifests.get(chain);
		if (cached?.stamp === stamp) return cached;
		const state = { stamp, ...readManifestChecked(dataDir, chain) };
		manifests.set(chain, state);
		if (state.manifest) void sweep(chain, state.manifest);
		return state;
	};
	const manifestOf = (chain: string): Manifest | null => manifestState(chain).manifest;
	const snapshotOf = (chain: string): Manifest | null => {
		const { manifest, problem } = manifestState(chain);
		if (problem != null) throw new DamagedDataError("MANIFEST_DAMAGED", manifestDamagedMessage(chain, problem));
		return manifest;
	};
	return { manifestState, manifestOf, snapshotOf };
}
