// Putting a part of a segment file (parts.ts): the file read, encoded and handed to the object
// store as one stream. A file that cannot be read must fail the put: a coalesce whose index was
// deleted while its checkpoint was published waited for ever (seen in CI as a request that got
// no answer in 60 s), because the read's error stopped short of the stream the store reads.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import zlib from "node:zlib";
import type { ObjectInfo, ObjectStore } from "@nats-io/obj";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FileEncoding, putPart, zstdAvailable } from "../../src/replication/nats/parts.ts";

/** An object store that reads what it is given to the end, as the real one does before it answers. */
function readingStore(): { store: ObjectStore; received: () => Buffer } {
  const chunks: Buffer[] = [];
  const store = {
    async put(_meta: unknown, stream: ReadableStream<Uint8Array>): Promise<ObjectInfo> {
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return {} as ObjectInfo;
        chunks.push(Buffer.from(value));
      }
    },
  } as unknown as ObjectStore;
  return { store, received: () => Buffer.concat(chunks) };
}

/** Settles with the put's outcome, or says it had not settled after `ms`. */
function within<T>(ms: number, promise: Promise<T>): Promise<T | "still waiting"> {
  return Promise.race([promise, new Promise<"still waiting">((r) => setTimeout(() => r("still waiting"), ms))]);
}

const ENCODINGS: FileEncoding[] = zstdAvailable ? ["identity", "zstd", "lanes-zstd"] : ["identity"];

describe("putting a part of a file", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "sift-parts-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  for (const encoding of ENCODINGS) {
    it(`fails, and does not wait, when the file is gone (${encoding})`, async () => {
      const { store } = readingStore();
      const put = putPart(
        store,
        { object: "o", path: join(dir, "deleted.bin"), start: 0, end: 99, encoding, maxChunk: 1024 },
        new AbortController().signal,
      );
      const outcome = await within(
        2_000,
        put.then(
          () => "stored",
          (error: NodeJS.ErrnoException) => error.code,
        ),
      );
      expect(outcome).toBe("ENOENT");
    });
  }

  it.skipIf(!zstdAvailable)("hands the store the file's bytes, compressed", async () => {
    const path = join(dir, "records.bin");
    const bytes = Buffer.from(JSON.stringify(Array.from({ length: 2_000 }, (_, i) => ({ id: `r${i}` }))));
    await writeFile(path, bytes);
    const { store, received } = readingStore();
    await putPart(
      store,
      { object: "o", path, start: 0, end: bytes.length - 1, encoding: "zstd", maxChunk: 1024 },
      new AbortController().signal,
    );
    expect(received().length).toBeLessThan(bytes.length);
    expect(zlib.zstdDecompressSync(received()).equals(bytes)).toBe(true);
  });
});
