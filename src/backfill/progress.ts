/**
 * Backfill progress: a redrawn bar with blocks/s, rows/s and ETA on a terminal, one plain log
 * line per written chunk otherwise (CI logs, files).
 */
export interface Progress {
	advance(blocks: number, rows: number): void;
	done(): void;
}

export function createProgress(opts: {
	total: number;
	stream?: NodeJS.WriteStream;
	log: (line: string) => void;
}): Progress {
	const stream = opts.stream ?? process.stderr;
	const tty = stream.isTTY === true;
	const started = performance.now();
	let blocks = 0;
	let rows = 0;
	let lastDraw = 0;

	const line = () => {
		const secs = Math.max(1e-3, (performance.now() - started) / 1000);
		const bps = blocks / secs;
		const eta = bps > 0 ? (opts.total - blocks) / bps : Number.POSITIVE_INFINITY;
		const pct = opts.total === 0 ? 100 : (blocks / opts.total) * 100;
		return `${blocks}/${opts.total} blocks (${pct.toFixed(1)}%) ${bps.toFixed(1)} blocks/s ${(rows / secs).toFixed(0)} rows/s ETA ${formatSeconds(eta)}`;
	};

	return {
		advance(b, r) {
			blocks += b;
			rows += r;
			if (!tty) {
				opts.log(line());
				return;
			}
			const now = performance.now();
			if (now - lastDraw < 100 && blocks < opts.total) return;
			lastDraw = now;
			const width = 30;
			const filled = opts.total === 0 ? width : Math.round((blocks / opts.total) * width);
			stream.write(`\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${line()}\x1b[K`);
		},
		done() {
			if (tty) stream.write("\n");
		},
	};
}

function formatSeconds(s: number): string {
	if (!Number.isFinite(s)) return "?";
	const m = Math.floor(s / 60);
	return m > 0 ? `${m}m${Math.round(s % 60)}s` : `${s.toFixed(0)}s`;
}
