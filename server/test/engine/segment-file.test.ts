import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SegmentBuilder } from "../../src/engine/embedded/build/segment-builder.ts";
import { createEmbeddedEngine } from "../../src/engine/embedded/index.ts";
import { INDEX_FILE, RECORDS_FILE } from "../../src/engine/embedded/segment/meta.ts";
import { Segment } from "../../src/engine/embedded/segment/segment.ts";
import type { SearchRecord, SearchRequest } from "../../src/ports/engine.ts";
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

  it("read only the sections asked for, into the heap, even where maps work", async () => {
    const file = path.join(dir, "only.bin");
    await writeSegmentFile(file, { docCount: 3 }, sections);
    const opened = await openSegmentFile(file, true, ["words", "reals"]);
    expect(opened.mapped).toBe(false);
    expect(plain(opened.sections)).toEqual({ words: plain(sections).words, reals: plain(sections).reals });
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

/**
 * The records of fixtures/segment-id-ranks, a segment written by the builder before the length
 * order (documents by weight then id, the ranks sections in id order, no docToLenRank). Their id
 * order and length order differ: b "Paris" is shorter than a "Paris Gare de Lyon", e "Pari" than c.
 */
const OLD_LAYOUT_RECORDS: SearchRecord[] = [
  { id: "a", title: "Paris Gare de Lyon", weight: 5 },
  { id: "b", title: "Paris", weight: 5, latitude: "48.85341", longitude: "2.3488" },
  { id: "c", title: "Parma" },
  { id: "d", title: "Paris Texas", latitude: "33.66094", longitude: "-95.55551" },
  { id: "e", title: "Pari", data: { price: 3 } },
  { id: "f", title: "Lyon Paris", weight: 5 },
  { id: "g", title: "Paris", data: { text: "lyon", price: 7 } },
  { id: "c", title: "Parme" },
];
const OLD_LAYOUT = path.join(import.meta.dirname, "fixtures", "segment-id-ranks");

/** Each split posting run's ranks, mapped through the length order, are its documents. */
function expectRanksInLengthOrder(segment: Segment): void {
  const { rankOf, docAt } = segment.lengthOrder;
  expect([...docAt].map((d) => rankOf[d])).toEqual([...docAt.keys()]);
  for (const postings of [segment.titlePostings, segment.prefixPostings]) {
    const { offsets, docs, ranks } = postings;
    for (let run = 0; run + 1 < offsets.length; run++) {
      const ranked = [...ranks.subarray(offsets[run]!, offsets[run + 1]!)];
      expect(ranked).toEqual([...ranked].sort((x, y) => x - y));
      const fromRanks = ranked.map((r) => docAt[r]!).sort((x, y) => x - y);
      expect(fromRanks).toEqual([...docs.subarray(offsets[run]!, offsets[run + 1]!)]);
    }
  }
}

describe("segments and the length order", () => {
  it.each([true, false])("open a segment built before the length order, in id order (mapped: %s)", async (map) => {
    const segment = await Segment.load(OLD_LAYOUT, map);
    try {
      expect(segment.lengthOrdered).toBe(false);
      expect(segment.lengthOrder.rankOf).toBe(segment.docToRank);
      expect(segment.lengthOrder.docAt).toBe(segment.rankToDoc);
      // Numbered by weight then id: a, b, f (weight 5), then c, d, e, g.
      expect(["a", "b", "f", "c", "d", "e", "g"].map((id) => segment.findDoc(id))).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expectRanksInLengthOrder(segment);
    } finally {
      segment.close();
    }
  });

  it("open a new segment with its own length order", async () => {
    const built = path.join(dir, "length-ordered");
    const builder = await SegmentBuilder.create(built, 4);
    for (const record of OLD_LAYOUT_RECORDS) builder.add(record);
    await builder.finishFiles();
    const segment = await Segment.load(built);
    try {
      expect(segment.lengthOrdered).toBe(true);
      // Numbered by weight, then the shorter title: b, f, a (weight 5), then e, c, g, d.
      expect(["b", "f", "a", "e", "c", "g", "d"].map((id) => segment.findDoc(id))).toEqual([0, 1, 2, 3, 4, 5, 6]);
      // The length order leaves weight out: e (4 units), b, c, g (5 units, by id), f, d, a.
      expect([...segment.lengthOrder.docAt]).toEqual([3, 0, 4, 5, 1, 6, 2]);
      expectRanksInLengthOrder(segment);
    } finally {
      segment.close();
    }
    // The fixture holds the same records.bin: only the index differs.
    expect(fs.readFileSync(path.join(built, RECORDS_FILE))).toEqual(
      fs.readFileSync(path.join(OLD_LAYOUT, RECORDS_FILE)),
    );
  });

  it("search a version whose segment was built before the length order", async () => {
    const dataDir = path.join(dir, "engine");
    let engine = createEmbeddedEngine({ dataDir });
    await engine.open();
    await engine.createIndex("k");
    const writer = await engine.bulkWriter("k", 1);
    await writer.add(OLD_LAYOUT_RECORDS);
    await writer.commit();
    await engine.close();
    // The major's segment replaced by the old builder's, written from the same records.
    const majors = fs.readdirSync(dataDir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(INDEX_FILE));
    expect(majors).toHaveLength(1);
    const major = path.dirname(path.join(dataDir, majors[0]!));
    expect(fs.readFileSync(path.join(major, RECORDS_FILE))).toEqual(
      fs.readFileSync(path.join(OLD_LAYOUT, RECORDS_FILE)),
    );
    fs.copyFileSync(path.join(OLD_LAYOUT, INDEX_FILE), path.join(major, INDEX_FILE));
    engine = createEmbeddedEngine({ dataDir });
    await engine.open();
    try {
      const search = async (version: string, query: string, options: Partial<SearchRequest> = {}) => {
        const request = {
          query,
          scope: "title",
          weighted: false,
          limit: 10,
          typoTolerance: false,
          ...options,
        } as const;
        return (await engine.search("k", version, request)).hits.map((hit) => hit.record.id);
      };
      const sorted = (ids: string[]) => [...ids].sort();
      expect(sorted(await search("1", "par"))).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
      expect(sorted(await search("1", "lyon"))).toEqual(["a", "f"]);
      expect(sorted(await search("1", "lyon", { scope: "all" }))).toEqual(["a", "f", "g"]);
      // Weight order: the two weighted records that start with "par" come first.
      expect(sorted(await search("1", "par", { weighted: true, limit: 2 }))).toEqual(["a", "b"]);
      // Nearest first: b is in Paris, d in Texas, a and g have no coordinates.
      expect(await search("1", "paris", { geo: { latitude: 48.86, longitude: 2.35 }, limit: 1 })).toEqual(["b"]);
      const paris = await search("1", "paris");
      expect(sorted(paris.slice(0, 4))).toEqual(["a", "b", "d", "g"]);
      expect(paris[4]).toBe("f");
      // A minor version on top of the old segment.
      await engine.applyChange("k", {
        version: "1.1",
        parent: "1",
        upserts: [{ id: "h", title: "Paris" }],
        deletes: ["a"],
      });
      expect(sorted(await search("1.1", "paris"))).toEqual(["b", "d", "f", "g", "h"]);
    } finally {
      await engine.close();
    }
  });
});
