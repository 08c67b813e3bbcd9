import { open } from "node:fs/promises";

/*
 * Whether a file is shaped like Parquet, without DuckDB: the one cheap check that every reader of
 * the store's files shares (verify, the Delta export before it reads a footer, the API's file
 * health). Here, in the format room, so that rooms below repair can check a file before they
 * read it.
 */

/** Said of a file that is not whole Parquet (DuckDB's "No magic bytes found at end of file"). */
export const NOT_PARQUET = "not a whole Parquet file (its footer is missing: truncated or overwritten)";

/**
 * The file exists and is shaped like Parquet (magic bytes at both ends, and a footer length that
 * fits). Catches a deleted, emptied or truncated file; not a page corrupted in the middle
 * (verify's full read does). Returns what is wrong, or null.
 */
export async function parquetShape(path: string): Promise<string | null> {
	let fh: Awaited<ReturnType<typeof open>>;
	try {
		fh = await open(path, "r");
	} catch (err) {
		const code = (err as NodeJS.ErrnoException).code;
		return code === "ENOENT" ? "missing" : `cannot be opened (${code ?? "error"})`;
	}
	try {
		const { size } = await fh.stat();
		if (size < 12) return size === 0 ? "empty" : NOT_PARQUET;
		const head = Buffer.alloc(4);
		const tail = Buffer.alloc(8);
		await fh.read(head, 0, 4, 0);
		await fh.read(tail, 0, 8, size - 8);
		const magic = (b: Buffer) => b.toString("latin1") === "PAR1";
		if (!magic(head) || !magic(tail.subarray(4)) || tail.readUInt32LE(0) + 12 > size) return NOT_PARQUET;
		return null;
	} catch (err) {
		return `cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`;
	} finally {
		await fh.close();
	}
}

/** Whether an error is a data file that is missing or unreadable (DuckDB's words for it). */
export const isFileError = (err: unknown): boolean =>
	/No magic bytes|No files found|Failed to read file|[Cc]orrupt|ENOENT/.test(String((err as Error)?.message ?? err));
