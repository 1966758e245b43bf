// The blob-store port: where upload bytes wait between the PUT and the ingest.
import type { Readable } from "node:stream";

export interface BlobStore {
  /**
   * Streams `source` into `key` with backpressure. Nothing is visible under `key` until the whole
   * body is written and flushed; a failed or interrupted write leaves nothing usable.
   * Rejects with BlobTooLargeError past `maxBytes`.
   */
  write(key: string, source: AsyncIterable<Uint8Array>, options: { maxBytes: number }): Promise<{ bytes: number }>;
  read(key: string): Promise<Readable>;
  size(key: string): Promise<number | undefined>;
  delete(key: string): Promise<void>;
  /** The complete blobs whose keys start with `prefix` (a folder, ending in `/`). */
  list(prefix: string): Promise<string[]>;
}

/** Where the bytes of uploads wait: one blob per version of an index. */
export const UPLOAD_BLOBS = "uploads/";
export const uploadBlobKey = (upload: { indexId: string; version: string }) =>
  `${UPLOAD_BLOBS}${upload.indexId}/${upload.version}.bin`;

/** The upload a key of uploadBlobKey's names; undefined for any other key. */
export function uploadOfBlobKey(key: string): { indexId: string; version: string } | undefined {
  const match = /^uploads\/([^/]+)\/([^/]+)\.bin$/.exec(key);
  return match ? { indexId: match[1]!, version: match[2]! } : undefined;
}

export class BlobTooLargeError extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`the upload is larger than the limit of ${maxBytes} bytes`);
    this.maxBytes = maxBytes;
  }
}
