// Moving one part of a segment file between a file on disk and the object store: read, compress
// and put; or get, decompress and write at the part's offset. Runs on the transfer thread
// (transfer-worker.ts), never on the server's thread: see transfer-thread.ts for why.
import { createReadStream, createWriteStream } from "node:fs";
import { Readable, type Transform, addAbortSignal, pipeline } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { pipeline as pipelineAsync } from "node:stream/promises";
import zlib from "node:zlib";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { ObjectInfo, ObjectStore } from "@nats-io/obj";
import { INDEX_FILE } from "../../engine/embedded/segment/meta.ts";
import { intoLanes, outOfLanes } from "./lanes.ts";
import { type Copy, openCopy } from "./object-copies.ts";
import { readOneChunk } from "./small-objects.ts";
import { readFileSync } from "node:fs";
import { type ConnectionOptions, credsAuthenticator } from "@nats-io/transport-node";
import type { NatsTls } from "../../config.ts";
import { serversOf } from "./servers.ts";

/**
 * Where and as whom a node connects: SIFT_NATS_URL's servers and credentials (servers.ts), or a
 * credentials file (SIFT_NATS_CREDS), read at each connection so that a rotated file is taken.
 */
export function connectionOf(options: {
  servers: string[];
  credsFile?: string | undefined;
  tls?: NatsTls | undefined;
}): ConnectionOptions {
  const { credsFile, tls } = options;
  return {
    ...serversOf(options.servers),
    ...(credsFile ? { authenticator: credsAuthenticator(() => readFileSync(credsFile)) } : {}),
    // A private CA, and a client certificate for servers that verify them (SIFT_NATS_TLS_*).
    ...(tls ? { tls: { ...tls } } : {}),
  };
}

/**
 * How every connection of a node to NATS behaves, the server's own and its transfer thread's: a
 * cluster member going away is routine, so reconnect to another one for as long as it takes.
 */
export const CONNECTION: Omit<ConnectionOptions, "servers" | "name"> = {
  maxReconnectAttempts: -1,
  reconnectTimeWait: 250,
  timeout: 5_000,
  // A server that hangs (a frozen machine, a partition) leaves the connection open and silent:
  // with the client's defaults (a ping every 2 minutes, two unanswered) every request failed for
  // 4 to 6 minutes before it moved to another server; now 10 to 15 s (D-349).
  pingInterval: 5_000,
  maxPingOut: 2,
  // Each request would otherwise capture a stack trace up front, in case it fails: measured at
  // about a tenth of a write's CPU on a replicating node (bench/RESULTS.md, Replication).
  noAsyncTraces: true,
};

/** The object store of segment files beside the log stream `stream`. */
export const filesBucket = (stream: string) => `${stream}_files`;

/** The object store of documents (snapshot pointers, positions, manifests) beside the log stream `stream`. */
export const docsBucket = (stream: string) => `${stream}_docs`;

/** `lanes-zstd`: each 1 MB block's bytes regrouped into lanes (lanes.ts), then zstd. */
export type FileEncoding = "zstd" | "lanes-zstd" | "identity";

/**
 * Segment files travel zstd-compressed (level 1: 264 MB of a 1M-record version became 102 MB in
 * 0.3 s, 32 MB with the index in lanes) where this Node has zstd (22.15 and later); a node without
 * it publishes them as they are.
 */
export const zstdAvailable = typeof (zlib as { createZstdCompress?: unknown }).createZstdCompress === "function";

/**
 * How a segment's file travels: the index, arrays of 32-bit numbers, in byte lanes (97 MB of a
 * 1M-record version's index became 27 MB, D-314); the records, JSON text, as zstd alone.
 */
export function encodingOf(file: string): FileEncoding {
  if (!zstdAvailable) return "identity";
  // A layered major's base index is "base-index.bin" (engine/embedded/versions/layers.ts).
  return file.endsWith(INDEX_FILE) ? "lanes-zstd" : "zstd";
}

/**
 * Streams of segment files move in 1 MB pieces: with the 16 to 64 kB defaults, a 1M-record major
 * took some 16,000 zstd callbacks and file writes on every node that fetched it.
 */
const PIECE = 1 << 20;
const ZSTD_FAST = zstdAvailable ? { chunkSize: PIECE, params: { [zlib.constants.ZSTD_c_compressionLevel]: 1 } } : {};

/** The streams a part goes through on its way to the store, and back, in each encoding. */
const STEPS: Record<FileEncoding, { encode: () => Transform[]; decode: () => Transform[] }> = {
  zstd: {
    encode: () => [zlib.createZstdCompress(ZSTD_FAST)],
    decode: () => [zlib.createZstdDecompress({ chunkSize: PIECE })],
  },
  "lanes-zstd": {
    encode: () => [intoLanes(), zlib.createZstdCompress(ZSTD_FAST)],
    decode: () => [zlib.createZstdDecompress({ chunkSize: PIECE }), outOfLanes()],
  },
  identity: { encode: () => [], decode: () => [] },
};

/** Bytes [start, end] of the file at `path`, put as `object` in chunks of at most `maxChunk`. */
export interface PutPart {
  object: string;
  path: string;
  start: number;
  /** The last byte's offset (inclusive); below `start` for an empty file. */
  end: number;
  encoding: FileEncoding;
  maxChunk: number;
}

/** `object` written into the file at `path` from byte `start` on (the file exists, sized). */
export interface FetchPart {
  object: string;
  path: string;
  start: number;
  encoding: FileEncoding;
  /** What the part belongs to, for the error when the store lacks it ("file x of segment y"). */
  of: string;
}

/** `signal` ends the part's streams (the thread closing): the put then fails and removes its chunks. */
export async function putPart(files: ObjectStore, part: PutPart, signal: AbortSignal): Promise<ObjectInfo> {
  signal.throwIfAborted();
  const end = Math.max(part.end, 0);
  const source = createReadStream(part.path, { start: part.start, end, highWaterMark: PIECE, signal });
  const steps = STEPS[part.encoding].encode();
  // Joined by pipeline, not pipe(): a file that cannot be read (its index deleted meanwhile, its
  // folder gone) must fail the put. Through pipe() the error stopped at the file's stream, and the
  // put waited for ever for the compressor's end (a coalesce that never answered, seen in CI, D-373).
  const body =
    steps.length === 0
      ? source
      : addAbortSignal(
          signal,
          // The failure reaches the put through the last stream, which pipeline destroys with it.
          pipeline([source, ...steps], () => {}) as Transform,
        );
  return files.put(
    { name: part.object, options: { max_chunk_size: part.maxChunk } },
    Readable.toWeb(body) as ReadableStream<Uint8Array>,
  );
}

/**
 * Writes `part` into its file. With `copy` (the region's copy of the bucket), the part is read
 * from there first; a copy that lacks it, or fails midway, leaves it to the bucket. Resolves with
 * why the copy failed when it did (one that only lacks the part is not a failure), for the log.
 */
export async function fetchPart(
  files: ObjectStore,
  jsm: JetStreamManager,
  bucket: string,
  part: FetchPart,
  signal: AbortSignal,
  copy?: Copy,
): Promise<string | undefined> {
  // A manifest written by a newer node: refused, never written as it is (D-314).
  if (!Object.hasOwn(STEPS, part.encoding)) {
    throw new Error(
      `${part.of} is encoded as "${part.encoding}", unknown here: a newer Sift published it, so upgrade this node`,
    );
  }
  let copyFailed: string | undefined;
  // The region's copy, then its patches where the copy skipped some chunks (D-348).
  for (const patched of copy !== undefined ? [false, true] : []) {
    try {
      const near = await openCopy(jsm, copy as Copy, part.object, { patched });
      if (near === null) break;
      await writePart(part, { source: Readable.from(near), error: Promise.resolve(null) }, signal);
      return undefined;
    } catch (error) {
      if (signal.aborted) throw error;
      // Written again, whole, from the patches or the bucket itself; the copy's failure is told.
      copyFailed ??= (error as Error).message;
    }
  }
  await writePart(part, await openPart(files, jsm, bucket, part), signal);
  return copyFailed;
}

/** Decodes `opened` into the part's place in its file. */
async function writePart(
  part: FetchPart,
  opened: { source: Readable; error: Promise<Error | null> },
  signal: AbortSignal,
): Promise<void> {
  const { source, error } = opened;
  if (signal.aborted) source.destroy();
  signal.throwIfAborted();
  // Flushed as each part ends, while the others still download: the flush of the whole set, which
  // the publisher waits for, then finds little left to write.
  const target = createWriteStream(part.path, { flags: "r+", start: part.start, highWaterMark: PIECE, flush: true });
  await pipelineAsync([source, ...STEPS[part.encoding].decode(), target], { signal });
  const failed = await error;
  if (failed) throw failed;
}

/** A part's bytes as a stream, and how the read ended (the object store's reader says so after the stream). */
async function openPart(
  files: ObjectStore,
  jsm: JetStreamManager,
  bucket: string,
  part: FetchPart,
): Promise<{ source: Readable; error: Promise<Error | null> }> {
  // A part of a small segment (a checkpoint's, most often) is one chunk: read without a consumer.
  const small = await readOneChunk(files, jsm, bucket, part.object);
  if (small instanceof Uint8Array) return { source: Readable.from([small]), error: Promise.resolve(null) };
  const result = small === null ? null : await files.get(part.object);
  if (result === null) throw new Error(`${part.of} is missing from the object store`);
  return { source: Readable.fromWeb(result.data as WebReadableStream<Uint8Array>), error: result.error };
}
