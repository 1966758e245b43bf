// Byte lanes (D-314): a segment's index file travels with each 1 MB block's bytes regrouped by
// their place in a 32-bit word, then zstd. What a node writes must be the file, byte for byte,
// however the stream is cut; and the regrouping must be what makes the index small.
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { fromLanes, intoLanes, LANE_BLOCK, outOfLanes, toLanes } from "../../src/replication/nats/lanes.ts";
import { encodingOf, fetchPart, zstdAvailable } from "../../src/replication/nats/parts.ts";

/** `bytes` fed to `stream` in pieces of random sizes (up to `most`), as a file or socket would. */
async function through(stream: NodeJS.ReadWriteStream, bytes: Buffer, most: number): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const size = 1 + Math.floor(Math.random() * most);
    pieces.push(bytes.subarray(at, at + size));
    at += size;
  }
  return buffer(Readable.from(pieces).pipe(stream));
}

/** What a segment's index mostly holds: ascending runs of document numbers. */
function postingRuns(words: number): Buffer {
  const runs = new Uint32Array(words);
  let doc = 0;
  for (let i = 0; i < words; i++) {
    if (i % 500 === 0) doc = Math.floor(Math.random() * 500_000);
    doc += 1 + Math.floor(Math.random() * 8);
    runs[i] = doc;
  }
  return Buffer.from(runs.buffer);
}

const zstd = (bytes: Buffer) =>
  zlib.zstdCompressSync(bytes, { params: { [zlib.constants.ZSTD_c_compressionLevel]: 1 } });

describe("byte lanes", () => {
  it("puts byte j of each word in lane j, and restores any block size", () => {
    const block = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    const lanes = new Uint8Array(block.length);
    toLanes(block, lanes);
    // Three words, then the two bytes after the last whole one, as they were.
    expect([...lanes]).toEqual([1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12, 13, 14]);
    for (const size of [0, 1, 3, 4, 5, 4099, LANE_BLOCK - 1, LANE_BLOCK]) {
      const bytes = randomBytes(size);
      const regrouped = new Uint8Array(size);
      toLanes(bytes, regrouped);
      if (size >= 8) expect(Buffer.from(regrouped).equals(bytes)).toBe(false);
      const back = new Uint8Array(size);
      fromLanes(regrouped, back);
      expect(Buffer.from(back).equals(bytes), `${size} bytes`).toBe(true);
    }
  });

  it("a full block regrouped word by word is the same as byte by byte", () => {
    const bytes = randomBytes(LANE_BLOCK);
    const fast = new Uint8Array(LANE_BLOCK);
    toLanes(bytes, fast);
    const words = LANE_BLOCK / 4;
    for (const i of [0, 1, 2, 3, 4, 12345, words - 1]) {
      for (let j = 0; j < 4; j++) expect(fast[j * words + i]).toBe(bytes[4 * i + j]);
    }
  });

  it("streams give back the bytes, cut anywhere, blocks counted from the stream's start", async () => {
    for (const size of [0, 7, LANE_BLOCK, 3 * LANE_BLOCK + 4099]) {
      const bytes = randomBytes(size);
      const regrouped = await through(intoLanes(), bytes, 300_000);
      expect(regrouped.length).toBe(size);
      const back = await through(outOfLanes(), regrouped, 700_000);
      expect(back.equals(bytes), `${size} bytes`).toBe(true);
    }
  });

  it.skipIf(!zstdAvailable)(
    "makes arrays of document numbers much smaller under zstd; the index travels so",
    async () => {
      const runs = postingRuns(2 * LANE_BLOCK);
      const plain = zstd(runs).length;
      const regrouped = zstd(await through(intoLanes(), runs, LANE_BLOCK)).length;
      expect(regrouped).toBeLessThan(plain / 2);
      expect(encodingOf("index.bin")).toBe("lanes-zstd");
      // Records are JSON text, which lanes would only scatter.
      expect(encodingOf("records.bin")).toBe("zstd");
    },
  );

  it("a part in an encoding this node does not know is refused, not written as it is", async () => {
    const part = {
      object: "x",
      path: "/nonexistent",
      start: 0,
      encoding: "brotli" as never,
      of: "file index.bin of s",
    };
    await expect(fetchPart({} as never, {} as never, "b", part, new AbortController().signal)).rejects.toThrow(
      'file index.bin of s is encoded as "brotli", unknown here',
    );
  });
});
