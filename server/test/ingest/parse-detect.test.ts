import { createReadStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openUpload } from "../../src/ingest/parse/index.ts";
import { chunked, openFailure, parse, sequentialIds } from "./parse-helpers.ts";

const samples = {
  csv: "id,title,price\n1,Lamp,25\n2,Desk,120\n",
  jsonl: '{"id":"1","title":"Lamp","price":25}\n{"id":"2","title":"Desk","price":120}\n',
  json: '[{"id":"1","title":"Lamp","price":25},{"id":"2","title":"Desk","price":120}]',
} as const;
const expected = [
  { id: "1", title: "Lamp", data: { price: 25 } },
  { id: "2", title: "Desk", data: { price: 120 } },
];

describe("upload format detection", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "sift-parse-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const [format, text] of Object.entries(samples)) {
    it(`detects ${format} by its content, plain, gzip-compressed or with a byte order mark`, async () => {
      for (const [variant, bytes] of [
        ["plain", Buffer.from(text)],
        ["gzip", gzipSync(text)],
        ["BOM", Buffer.from(`\ufeff${text}`)],
        ["gzip with BOM", gzipSync(`\ufeff${text}`)],
      ] as const) {
        const parsed = await parse(bytes, { chunking: { random: 5, seed: 4 } });
        expect({ variant, format: parsed.format, gzip: parsed.gzip }).toEqual({
          variant,
          format,
          gzip: variant.startsWith("gzip"),
        });
        expect(parsed.records).toEqual(expected);
        expect(parsed.errors).toEqual([]);
      }
    });
  }

  it("ignores the file name: JSON Lines saved as records.csv is read as JSON Lines", async () => {
    const path = join(dir, "records.csv");
    await writeFile(path, samples.jsonl);
    const parsed = await parse(createReadStream(path));
    expect(parsed.format).toBe("jsonl");
    expect(parsed.records).toEqual(expected);
  });

  it("counts blank lines before the content in line numbers", async () => {
    const parsed = await parse('\n  \r\n\n{"title":"ok"}\n{"weight":1}\n');
    expect(parsed.errors).toEqual([{ line: 5, field: "title", message: "title is required" }]);
  });

  it("rejects an empty file, a blank one and an empty gzip stream clearly", async () => {
    expect(await openFailure("")).toMatchObject({ line: 1, message: "the file is empty" });
    expect(await openFailure("\ufeff \n\t\r\n ")).toMatchObject({ line: 1, message: "the file is empty" });
    expect(await openFailure(gzipSync(""))).toMatchObject({ line: 1, message: "the file is empty once decompressed" });
  });

  it("names UTF-16 text and ZIP archives instead of misreading them as CSV", async () => {
    expect((await openFailure(Buffer.from("\ufefftitle\n", "utf16le"))).message).toMatch(/UTF-16.*UTF-8/);
    expect((await openFailure(Buffer.from("PK\x03\x04rest of a workbook"))).message).toMatch(/ZIP archive/);
  });

  it("rejects gzip magic followed by data that is not gzip", async () => {
    const failure = await openFailure(Buffer.from([0x1f, 0x8b, 0x00, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42]));
    expect(failure).toMatchObject({ line: 1, message: expect.stringMatching(/^the gzip data is corrupt/) });
  });

  it("stops at a truncated gzip stream after delivering what it decompressed", async () => {
    const text = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ title: `record ${i} ${i * 7919}` })).join(
      "\n",
    );
    const compressed = gzipSync(text);
    const parsed = await parse(compressed.subarray(0, compressed.length / 2), { chunking: 4096 });
    expect(parsed.gzip).toBe(true);
    expect(parsed.records.length).toBeGreaterThan(1000);
    expect(parsed.records.length).toBeLessThan(20_000);
    expect(parsed.failure?.message).toMatch(/^the gzip data is corrupt or truncated/);
    expect(parsed.failure?.line).toBeGreaterThan(parsed.records.length);
  });

  it("reports progress in bytes read from the source, compressed bytes for gzip", async () => {
    const compressed = gzipSync(samples.csv.repeat(50));
    const progress: number[] = [];
    await parse(compressed, { chunking: 100, onProgress: (bytes) => progress.push(bytes) });
    expect(progress.at(-1)).toBe(compressed.length);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
  });

  for (const gzip of [false, true]) {
    const jsonl = samples.jsonl.repeat(2000);
    const bytes = gzip ? gzipSync(jsonl) : Buffer.from(jsonl);
    const kind = gzip ? "gzip-compressed" : "plain";

    it(`stops a ${kind} upload with the abort reason when the signal is aborted`, async () => {
      const controller = new AbortController();
      const upload = await openUpload(chunked(bytes, 64), {
        generateId: sequentialIds,
        batchSize: 10,
        signal: controller.signal,
      });
      let batches = 0;
      await expect(
        (async () => {
          for await (const _batch of upload.batches) {
            if (++batches === 3) controller.abort(new Error("ingest cancelled"));
          }
        })(),
      ).rejects.toThrow("ingest cancelled");
      expect(batches).toBeLessThan(50);
    });

    it(`closes the source of a ${kind} upload when the caller stops reading early`, async () => {
      const source = Readable.from(chunked(bytes, 1024));
      const upload = await openUpload(source, { generateId: sequentialIds, batchSize: 5 });
      for await (const batch of upload.batches) {
        expect(batch.records).toHaveLength(5);
        break;
      }
      await new Promise((resolve) => setImmediate(resolve));
      expect(source.destroyed).toBe(true);
    });
  }
});
