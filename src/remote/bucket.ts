import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
	DeleteObjectsCommand,
	GetObjectCommand,
	ListObjectsV2Command,
	PutObjectCommand,
	S3Client,
	S3ServiceException,
} from "@aws-sdk/client-s3";

/**
 * A lake's place in an S3 bucket, `s3://bucket/prefix`: the same layout as a data folder
 * (`<prefix>/<chain>/<dataset>/<file>.parquet`, `<prefix>/<chain>/_manifest.json`), so a key is
 * the prefix plus a path relative to the data folder.
 *
 * The client is the AWS SDK's, configured as every AWS tool is: credentials and region from the
 * environment (AWS_ACCESS_KEY_ID, AWS_REGION, profiles...), and for an S3-compatible server
 * other than AWS (MinIO, s3rver) its address in `endpoint` or AWS_ENDPOINT_URL_S3 /
 * AWS_ENDPOINT_URL, then addressed path-style (bucket in the path, as those servers expect).
 */
export interface Bucket {
	/** `s3://bucket/prefix`, as given. */
	url: string;
	/** The object at `path` (relative to the lake), or null if there is none; `etag`: null if unchanged since. */
	get(path: string, etag?: string): Promise<{ body: Uint8Array; etag: string } | null | "unchanged">;
	/** Streams the object at `path` into the file `to` (not held in memory: data files run to
	 * hundreds of MB); its size, or null if there is no such object. */
	download(path: string, to: string): Promise<number | null>;
	/** Uploads a local file (streamed) or bytes to `path`. */
	put(path: string, from: { file: string } | { bytes: Uint8Array | string }): Promise<void>;
	/** Every object under `path` (a folder, relative to the lake), as lake-relative paths. */
	list(path: string): Promise<string[]>;
	/** The chain folders at the lake's top (`eip155-<n>`). */
	chains(): Promise<string[]>;
	delete(paths: string[]): Promise<void>;
	close(): void;
}

/** `s3://bucket/prefix` → its bucket and prefix (no leading or trailing slash), or an error saying what is wrong. */
export function parseBucketUrl(url: string): { bucket: string; prefix: string } {
	const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
	if (!m)
		throw new Error(
			`not an S3 address: ${JSON.stringify(url)} (write s3://<bucket>/<prefix>, e.g. s3://chainlake/mainnet)`,
		);
	return { bucket: m[1] as string, prefix: (m[2] ?? "").replace(/^\/+|\/+$/g, "") };
}

export function openBucket(url: string, opts: { endpoint?: string } = {}): Bucket {
	const { bucket, prefix } = parseBucketUrl(url);
	const endpoint = opts.endpoint || process.env.AWS_ENDPOINT_URL_S3 || process.env.AWS_ENDPOINT_URL || undefined;
	const client = new S3Client({
		region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? "us-east-1",
		...(endpoint ? { endpoint, forcePathStyle: true } : {}),
		// Checksums only where S3 requires them: the default sends uploads in aws-chunked
		// encoding with a trailing checksum, which S3-compatible servers do not all take.
		requestChecksumCalculation: "WHEN_REQUIRED",
		responseChecksumValidation: "WHEN_REQUIRED",
	});
	const key = (path: string) => (prefix ? `${prefix}/${path}` : path);
	const unkey = (k: string) => (prefix ? k.slice(prefix.length + 1) : k);
	const status = (err: unknown) => (err instanceof S3ServiceException ? err.$metadata.httpStatusCode : undefined);
	return {
		url,
		async get(path, etag) {
			try {
				const out = await client.send(
					new GetObjectCommand({ Bucket: bucket, Key: key(path), ...(etag ? { IfNoneMatch: etag } : {}) }),
				);
				return {
					body: await (out.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
					etag: out.ETag ?? "",
				};
			} catch (err) {
				if (status(err) === 304) return "unchanged";
				if (status(err) === 404) return null;
				throw err;
			}
		},
		async download(path, to) {
			try {
				const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key(path) }));
				await pipeline(out.Body as Readable, createWriteStream(to));
				const size = (await stat(to)).size;
				if (out.ContentLength !== undefined && size !== out.ContentLength)
					throw new Error(`${path}: fetched ${size} of its ${out.ContentLength} bytes (cut short)`);
				return size;
			} catch (err) {
				if (status(err) === 404) return null;
				throw err;
			}
		},
		async put(path, from) {
			const body =
				"file" in from
					? { Body: createReadStream(from.file), ContentLength: (await stat(from.file)).size }
					: { Body: from.bytes };
			await client.send(new PutObjectCommand({ Bucket: bucket, Key: key(path), ...body }));
		},
		async list(path) {
			const out: string[] = [];
			let token: string | undefined;
			do {
				const page = await client.send(
					new ListObjectsV2Command({
						Bucket: bucket,
						Prefix: key(`${path.replace(/\/+$/, "")}/`),
						ContinuationToken: token,
					}),
				);
				for (const o of page.Contents ?? []) if (o.Key) out.push(unkey(o.Key));
				token = page.IsTruncated ? page.NextContinuationToken : undefined;
			} while (token);
			return out;
		},
		async chains() {
			const page = await client.send(
				new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix ? `${prefix}/` : "", Delimiter: "/" }),
			);
			return (page.CommonPrefixes ?? [])
				.map((p) => unkey(p.Prefix ?? "").replace(/\/$/, ""))
				.filter((c) => /^eip155-\d+$/.test(c));
		},
		async delete(paths) {
			// DeleteObjects takes up to 1,000 keys a request.
			for (let i = 0; i < paths.length; i += 1000)
				await client.send(
					new DeleteObjectsCommand({
						Bucket: bucket,
						Delete: { Objects: paths.slice(i, i + 1000).map((p) => ({ Key: key(p) })), Quiet: true },
					}),
				);
		},
		close: () => client.destroy(),
	};
}
