/** RPC URLs often carry API keys in the path or query: logs show only scheme, host and port. */
export function redactUrl(url: string): string {
	try {
		const u = new URL(url);
		const hidden = u.pathname.length > 1 || u.search ? "/…" : "";
		return `${u.protocol}//${u.host}${hidden}`;
	} catch {
		return "<invalid url>";
	}
}
