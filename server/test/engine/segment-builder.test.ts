// The builder's memory-bounded paths must produce exactly the index the plain path does, and the
// document orders the search reads (sections.ts) must be the ones the rank order ends with.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { SearchRecord } from "../../src/ports/engine.ts";
import { SegmentBuilder } from "../../src/engine/embedded/build/segment-builder.ts";
import { titleLengthKey } from "../../src/engine/embedded/columns/title-length.ts";
import { tokenize } from "../../src/engine/tokenize.ts";
import { openSegmentFile, type Section } from "../../src/engine/embedded/segment/segment-file.ts";
import { INDEX_FILE, RECORDS_FILE } from "../../src/engine/embedded/segment/meta.ts";
import { random } from "../support/random.ts";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "sift-builder-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const WORDS = ["san", "santa", "Santé", "río", "rio", "東京", "x", "new", "newt", "york", "a", "ab"];
const ID_CHARS = ["a", "b", "é", "Ω", "😀", "\ue000", "1"];

function records(count: number): SearchRecord[] {
  const rand = random(11);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  return Array.from({ length: count }, (_, i) => {
    // Some ids repeat: the later record must replace the earlier one.
    const id =
      rand() < 0.1
        ? `dup${i % 7}`
        : Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(ID_CHARS)).join("") + i;
    const record: SearchRecord = {
      id,
      title: Array.from({ length: 1 + Math.floor(rand() * 4) }, () => pick(WORDS)).join(" "),
      data: { colour: pick(["red", "blue", "york"]), price: Math.floor(rand() * 100) },
    };
    if (rand() < 0.5) record.weight = Math.floor(rand() * 5);
    if (rand() < 0.6) {
      record.latitude = (rand() * 170 - 85).toFixed(6);
      record.longitude = (rand() * 360 - 180).toFixed(6);
    }
    return record;
  });
}

async function build(name: string, window: number | undefined, input: SearchRecord[]) {
  const dir = path.join(root, name);
  const builder = await SegmentBuilder.create(dir, 3, window);
  for (const r of input) builder.add(r);
  const meta = await builder.finishFiles();
  const file = await openSegmentFile(path.join(dir, INDEX_FILE), false);
  return { meta, sections: file.sections, records: fs.readFileSync(path.join(dir, RECORDS_FILE)) };
}

describe("segment builder", () => {
  it("fills posting sections window by window into the same index as in one pass", async () => {
    const input = records(3000);
    const whole = await build("whole", undefined, input);
    const windowed = await build("windowed", 64, input);
    expect(windowed.meta).toEqual(whole.meta);
    expect(Object.keys(windowed.sections).sort()).toEqual(Object.keys(whole.sections).sort());
    for (const [name, section] of Object.entries(whole.sections)) {
      expect(Buffer.compare(Buffer.from(windowed.sections[name]!.buffer), Buffer.from(section.buffer)), name).toBe(0);
    }
    expect(windowed.records.equals(whole.records)).toBe(true);
    // Duplicated ids were folded: 7 "dup" ids at most, each once.
    expect(whole.meta.docCount).toBeLessThan(3000);
    expect(whole.sections.prefixDocs!.length).toBeGreaterThan(64 / 4);
  });

  it("holds the same documents in a run's weight, length and geo orders", async () => {
    // The length and geo orders are derived from the weight order window by window: each run must
    // be exactly the weight-order run's documents, mapped to their positions in that order,
    // ascending. 100,000 records: long runs (over 16,384 documents) are radix sorted, shorter not.
    const input = records(100_000);
    const { sections } = await build("orders", 1 << 16, input);
    const docToLenRank = sections.docToLenRank!;
    const geoPosition = new Map([...sections.geoDocs!].map((doc, position) => [doc, position]));
    expect(geoPosition.size).toBeGreaterThan(0);
    const ascending = (xs: number[]) => xs.sort((a, b) => a - b);
    let longest = 0;
    for (const kind of ["term", "prefix"]) {
      const post = sections[`${kind}Post`]!;
      const postGeo = sections[`${kind}PostGeo`]!;
      const slice = (name: string, from: number, to: number) => [...sections[`${kind}${name}`]!.subarray(from, to)];
      for (let run = 0; run + 1 < post.length; run++) {
        const docs = slice("Docs", post[run]!, post[run + 1]!);
        expect(docs).toEqual(ascending([...docs]));
        expect(slice("Ranks", post[run]!, post[run + 1]!)).toEqual(ascending(docs.map((d) => docToLenRank[d]!)));
        const located = docs.filter((d) => geoPosition.has(d)).map((d) => geoPosition.get(d)!);
        expect(slice("Geo", postGeo[run]!, postGeo[run + 1]!)).toEqual(ascending(located));
        longest = Math.max(longest, docs.length);
      }
    }
    expect(longest).toBeGreaterThan(16_384);
    // Data postings are filled in arrival order and sorted too: each run ascending, no repeats.
    const dataPost = sections.dataPost!;
    const dataDocs = sections.dataDocs!;
    for (let t = 0; t + 1 < dataPost.length; t++) {
      for (let i = dataPost[t]! + 1; i < dataPost[t + 1]!; i++) expect(dataDocs[i]!).toBeGreaterThan(dataDocs[i - 1]!);
    }
    expect(dataDocs.length).toBeGreaterThan(16_384);
    expectOrders(input, sections);
  });

  it("numbers documents by weight, then the shorter title (tokens, then UTF-16 units), then id", async () => {
    // Ids run against the expected order, so that only weight and title length can produce it.
    const input: SearchRecord[] = [
      { id: "c", title: "C" }, // replaced below: its length must not count
      { id: "a", title: "York York York" }, // 3 tokens (repeats count), 14 units
      { id: "b", title: "New York City" }, // 3 tokens, 13 units
      { id: "c", title: "New York" }, // 2 tokens, 8 units; replaces the first c
      { id: "d", title: "New-York" }, // 2 tokens, 8 units: tied with c, then by id
      { id: "e", title: "😀 York" }, // 1 token (the emoji is none), 7 units (6 code points)
      { id: "j", title: "York !" }, // 1 token, 6 units: before e by units, not by code points
      { id: "f", title: "Yórk" }, // 1 token, 4 units (NFC)
      { id: "g", title: "Yo\u0301rk" }, // 1 token, 5 units (decomposed)
      { id: "h", title: "York", weight: 1 },
      { id: "i", title: "York" },
    ];
    const { sections } = await build("lengths", undefined, input);
    const idAtRank = idsByRank(sections);
    const idsOf = (docs: Iterable<number>) => [...docs].map((d) => idAtRank[sections.docToRank![d]!]);
    // Document numbers: weight first, then tokens, then units, then id.
    expect(idsOf([...sections.weight!.keys()])).toEqual(["h", "f", "i", "g", "j", "e", "c", "d", "b", "a"]);
    // Length order: no weight; h and i tie on length and go by id.
    expect(idsOf(sections.lenRankToDoc!)).toEqual(["f", "h", "i", "g", "j", "e", "c", "d", "b", "a"]);
    expectOrders(input, sections);
  });

  it("keeps the last record of an id, and orders ids by code point", async () => {
    const input: SearchRecord[] = [
      { id: "b", title: "first" },
      { id: "\ue000", title: "private use" },
      { id: "😀", title: "astral" },
      { id: "b", title: "second" },
      { id: "é", title: "accent" },
    ];
    const { meta, sections } = await build("ids", undefined, input);
    expect(meta.docCount).toBe(4);
    const ids = Buffer.from(sections.idBytes!.buffer).toString("utf8");
    expect(ids).toBe(["b", "é", "\ue000", "😀"].join(""));
  });
});

/** The ids of a built segment by id rank, from its id table. */
function idsByRank(sections: Record<string, Section>): string[] {
  const bytes = Buffer.from(sections.idBytes!.buffer, sections.idBytes!.byteOffset, sections.idBytes!.byteLength);
  const offsets = sections.idOffsets!;
  return Array.from({ length: offsets.length - 1 }, (_, r) => bytes.toString("utf8", offsets[r]!, offsets[r + 1]!));
}

/**
 * The segment's document numbering is (weight desc, length key asc, id asc) and its length order
 * (length key asc, id asc), both recomputed here from the records (the last of each id), with the
 * length key from tokenize and the title as given; the two length sections are inverses.
 */
function expectOrders(input: SearchRecord[], sections: Record<string, Section>): void {
  const live = new Map(input.map((r) => [r.id, r]));
  const records = [...live.values()].map((r) => ({
    id: r.id,
    utf8: Buffer.from(r.id),
    weight: r.weight ?? 0,
    key: titleLengthKey(tokenize(r.title).length, r.title.length),
  }));
  type Sortable = (typeof records)[number];
  const byLength = (a: Sortable, b: Sortable) => a.key - b.key || Buffer.compare(a.utf8, b.utf8);
  const byWeight = (a: Sortable, b: Sortable) => b.weight - a.weight || byLength(a, b);
  const idAtRank = idsByRank(sections);
  const docToRank = sections.docToRank!;
  const docIds = Array.from({ length: docToRank.length }, (_, d) => idAtRank[docToRank[d]!]!);
  expect(docIds).toEqual(records.sort(byWeight).map((r) => r.id));
  const lengthIds = [...sections.lenRankToDoc!].map((d) => docIds[d]!);
  expect(lengthIds).toEqual(records.sort(byLength).map((r) => r.id));
  const docToLenRank = sections.docToLenRank!;
  expect([...sections.lenRankToDoc!].map((d) => docToLenRank[d])).toEqual(lengthIds.map((_, rank) => rank));
  expect(docToLenRank.length).toBe(docIds.length);
  // The title token counts are the forward index's.
  const fwd = sections.fwdOffsets!;
  expect(docIds.map((_, d) => fwd[d + 1]! - fwd[d]!)).toEqual(docIds.map((id) => tokenize(live.get(id)!.title).length));
}
