// Bulk upload from the SDK: start, PUT the bytes to the signed URL (streamed, with progress),
// complete; then poll the ingest until it finishes.
import type { components } from "@sift/contract";
import { SiftApiError, SiftIngestFailedError, SiftTimeoutError, type Problem } from "./errors.ts";

type IngestStatus = components["schemas"]["IngestStatus"];

export type UploadSource = Blob | ArrayBuffer | Uint8Array | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

export interface UploadOptions {
  /** Bytes sent so far, and the total when it is known. */
  onProgress?: (sent: number, total: number | undefined) => void;
  /** Total size of a stream source, for progress. */
  size?: number;
  /** Make the version active when its ingest succeeds (default true). */
  activate?: boolean;
  /** Ingest the valid records and report the invalid ones instead of failing the file. */
  skipInvalid?: boolean;
  signal?: AbortSignal;
}

export interface UploadApi {
  start(indexName: string): Promise<{ uploadUrl: string; indexVersion: string }>;
  complete(body: components["schemas"]["UploadCompleteRequest"]): Promise<unknown>;
  status(indexName: string, indexVersion: string): Promise<IngestStatus>;
}

const isNode = () =>
  typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === "string";

function toStream(source: UploadSource): { stream: ReadableStream<Uint8Array>; total: number | undefined } {
  if (source instanceof Blob) return { stream: source.stream(), total: source.size };
  if (source instanceof ArrayBuffer || source instanceof Uint8Array) {
    const bytes = source instanceof Uint8Array ? source : new Uint8Array(source);
    return { stream: new Blob([bytes as Uint8Array<ArrayBuffer>]).stream(), total: bytes.byteLength };
  }
  if (source instanceof ReadableStream) return { stream: source, total: undefined };
  const iterator = source[Symbol.asyncIterator]();
  return {
    stream: new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await iterator.next();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      async cancel() {
        await iterator.return?.();
      },
    }),
    total: undefined,
  };
}

/** PUTs the bytes to a signed upload URL; resolves with the bytes Sift stored. */
export async function putToUploadUrl(
  uploadUrl: string,
  source: UploadSource,
  options: UploadOptions & { fetch?: typeof fetch } = {},
): Promise<number> {
  const doFetch = options.fetch ?? globalThis.fetch;
  let body: BodyInit;
  let total: number | undefined;
  if (source instanceof Blob && !isNode()) {
    // Browsers stream request bodies only over HTTP/2; a Blob is sent whole and reported at the end.
    body = source;
    total = source.size;
  } else {
    const { stream, total: known } = toStream(source);
    total = known ?? options.size;
    let sent = 0;
    body = stream.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          sent += chunk.byteLength;
          options.onProgress?.(sent, total);
          controller.enqueue(chunk);
        },
      }),
    );
  }
  const response = await doFetch(uploadUrl, {
    method: "PUT",
    headers: {
      "content-type": "application/octet-stream",
      ...(total !== undefined ? { "content-length": String(total) } : {}),
    },
    body,
    ...(options.signal ? { signal: options.signal } : {}),
    duplex: "half",
  } as RequestInit);
  const text = await response.text();
  if (!response.ok) {
    let problem: Problem | undefined;
    try {
      problem = JSON.parse(text) as Problem;
    } catch {
      problem = undefined;
    }
    throw new SiftApiError(response.status, problem, response.headers.get("x-request-id") ?? undefined);
  }
  const bytes = (JSON.parse(text) as { bytes: number }).bytes;
  if (body instanceof Blob) options.onProgress?.(bytes, total);
  return bytes;
}

/** start → PUT → complete. Resolves once the ingest is queued, with the version it will become. */
export async function uploadFile(
  api: UploadApi,
  indexName: string,
  source: UploadSource,
  options: UploadOptions & { fetch?: typeof fetch } = {},
): Promise<{ indexVersion: string; bytes: number }> {
  const { uploadUrl, indexVersion } = await api.start(indexName);
  const bytes = await putToUploadUrl(uploadUrl, source, options);
  await api.complete({
    indexName,
    indexVersion,
    ...(options.activate !== undefined ? { activate: options.activate } : {}),
    ...(options.skipInvalid !== undefined ? { skipInvalid: options.skipInvalid } : {}),
  });
  return { indexVersion, bytes };
}

/** Polls until the ingest succeeds (resolves with its status) or fails (throws SiftIngestFailedError). */
export async function waitForIngest(
  api: UploadApi,
  indexName: string,
  indexVersion: string,
  options: {
    intervalMs?: number;
    timeoutMs?: number;
    signal?: AbortSignal;
    onStatus?: (status: IngestStatus) => void;
  } = {},
): Promise<IngestStatus> {
  const deadline = Date.now() + (options.timeoutMs ?? 60 * 60_000);
  let interval = Math.min(options.intervalMs ?? 250, 2_000);
  for (;;) {
    const status = await api.status(indexName, indexVersion);
    options.onStatus?.(status);
    if (status.state === "succeeded") return status;
    if (status.state === "failed") throw new SiftIngestFailedError(status);
    if (Date.now() > deadline)
      throw new SiftTimeoutError(`ingest of version ${indexVersion} still ${status.state} after the timeout`);
    options.signal?.throwIfAborted();
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(interval * 1.5, options.intervalMs ?? 2_000);
  }
}
