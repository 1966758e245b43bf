import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  SegmentFileWriter,
  openSegmentFile,
  sectionOf,
  writeSegmentFile,
  type Section,
} from "../../src/engine/embedded/segment/segment-file.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-segfile-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const sections: Record<string, Section> = {
  bytes: Uint8Array.from([1, 2, 3]),
  words: Uint32Array.from([0, 0xffff_ffff, 5]),
  empty: new Uint32Array(0),
  reals: Float64Array.from([NaN, -1.5, 1e300]),
};
const plain = (all: Record<string, Section>) => Object.fromEntries(Object.entries(all).map(([k, v]) => [k, [...v]]));

/** The layout earlier releases wrote: header first, sections after it. */
function writeV1(file: string, meta: unknown, all: Record<string, Section>): void {
  const align8 = (n: number) => Math.ceil(n / 8) * 8;
  const header: { meta: unknown; sections: Record<string, unknown> } = { meta, sections: {} };
  let offset = 0;
  for (const [name, a] of Object.entries(all)) {
    header.sections[name] = {
      type: a instanceof Float64Array ? "f64" : a instanceof Uint32Array ? "u32" : "u8",
      offset,
      length: a.length,
    };
    offset = align8(offset + a.byteLength);
  }
  const json = Buffer.from(JSON.stringify(header));
  const base = align8(16 + json.length);
  const out = Buffer.alloc(base + offset);
  out.write("SIFTSEG1", 0, "latin1");
  out.writeUInt32LE(json.length, 8);
  json.copy(out, 16);
  for (const [name, a] of Object.entries(all)) {
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).copy(
      out,
      base + (header.sections[name] as { offset: number }).offset,
    );
  }
  fs.writeFileSync(file, out);
}

describe("segment files", () => {
  it.each([true, false])("round-trip every section type (mapped: %s)", async (map) => {
    const file = path.join(dir, `v2-${map}.bin`);
    await writeSegmentFile(file, { docCount: 3 }, sections);
    const opened = await openSegmentFile(file, map);
    expect(opened.mapped).toBe(map);
    expect(opened.meta).toEqual({ docCount: 3 });
    expect(plain(opened.sections)).toEqual(plain(sections));
    expect(opened.sections.reals).toBeInstanceOf(Float64Array);
  });

  it.each([true, false])("open files of the earlier header-first layout (mapped: %s)", async (map) => {
    const file = path.join(dir, `v1-${map}.bin`);
    writeV1(file, { docCount: 3 }, sections);
    const opened = await openSegmentFile(file, map);
    expect(opened.meta).toEqual({ docCount: 3 });
    expect(plain(opened.sections)).toEqual(plain(sections));
  });

  it("refuse a truncated file instead of mapping past its end", async () => {
    const file = path.join(dir, "cut.bin");
    await writeSegmentFile(file, {}, { words: new Uint32Array(1000) });
    const whole = fs.readFileSync(file);
    // Keep the header (at the end) but drop most of the section before it.
    const header = whole.subarray(whole.readDoubleLE(8));
    const cut = Buffer.concat([whole.subarray(0, 64), header]);
    cut.writeDoubleLE(64, 8);
    fs.writeFileSync(file, cut);
    await expect(openSegmentFile(file, true)).rejects.toThrow(/truncated/);
    fs.writeFileSync(file, whole.subarray(0, 10));
    await expect(openSegmentFile(file, true)).rejects.toThrow(/truncated|not a segment file/);
  });

  it("fill reserved sections in parts, side by side and out of order, and read them back while writing", async () => {
    const file = path.join(dir, "parts.bin");
    const out = await SegmentFileWriter.create(file);
    const words = { stored: "words", type: "u32" } as const;
    await out.add({ stored: "head", type: "u32" }, Uint32Array.from([7]));
    const putBytes = out.reserve({ stored: "bytes", type: "u8" }, 5);
    const putWords = out.reserve(words, 6);
    await out.add({ stored: "tail", type: "f64" }, Float64Array.from([2.5]));
    await putWords(Uint32Array.from([40, 50]), 4);
    await putBytes(Uint8Array.from([9, 8]), 3);
    await putWords(Uint32Array.from([10, 20]), 1);
    const back = new Uint32Array(3);
    await out.read(words, 2, back);
    expect([...back]).toEqual([20, 0, 40]);
    await expect(putWords(Uint32Array.from([1, 2]), 5)).rejects.toThrow(/out of/);
    // @ts-expect-error: a part of another element type is refused at run time too
    await expect(putWords(Uint8Array.from([1]), 0)).rejects.toThrow(/1-byte elements/);
    await expect(out.read(words, 5, new Uint32Array(2))).rejects.toThrow(/cannot read/);
    await out.finish({});
    const opened = await openSegmentFile(file, true);
    // Parts never put stay zero.
    expect(plain(opened.sections)).toEqual({
      head: [7],
      bytes: [0, 0, 0, 9, 8],
      words: [0, 10, 20, 0, 40, 50],
      tail: [2.5],
    });
  });

  it("hand out a section only under its element type", async () => {
    const file = path.join(dir, "typed.bin");
    const out = await SegmentFileWriter.create(file);
    // @ts-expect-error: an array of another element type is refused at run time too
    await expect(out.add({ stored: "reals", type: "f64" }, Uint32Array.from([1]))).rejects.toThrow(
      /u32 elements in a f64 section/,
    );
    await out.add({ stored: "words", type: "u32" }, Uint32Array.from([1, 2]));
    await out.finish({});
    const { sections: opened } = await openSegmentFile(file, false);
    expect([...sectionOf(opened, { stored: "words", type: "u32" })]).toEqual([1, 2]);
    expect(() => sectionOf(opened, { stored: "words", type: "f64" })).toThrow(/no f64 section words/);
    expect(() => sectionOf(opened, { stored: "reals", type: "f64" })).toThrow(/no f64 section reals/);
  });
});
