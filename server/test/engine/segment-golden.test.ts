// The bytes of a segment built from a fixed dataset, against digests computed once: records.bin's
// with the builder as it was before the engine was laid out by parts (one writer per part),
// index.bin's with the builder that put a document with a key at the first title token and at a
// later one into both of the key's runs (meta.laterRuns), after the length order (documents
// numbered by weight, title length, id; docToLenRank and lenRankToDoc), with value columns
// (value{i}… sections, meta.valuePaths and valueOverflow: issue 16), and with numbers and
// booleans in the value columns only (no filter{i}… sections, meta.scalarsKept: D-200). A change
// of the builder that is not meant to change the format must leave them alone.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { SearchRecord } from "../../src/ports/engine.ts";
import { SegmentBuilder } from "../../src/engine/embedded/build/segment-builder.ts";
import { openSegmentFile } from "../../src/engine/embedded/segment/segment-file.ts";
import { INDEX_FILE, RECORDS_FILE } from "../../src/engine/embedded/segment/meta.ts";
import { random } from "../support/random.ts";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "sift-golden-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const SYLLABLES = [
  "san",
  "ta",
  "ré",
  "río",
  "ö",
  "straß",
  "東",
  "京",
  "😀",
  "ny",
  "k",
  "ab",
  "zoë",
  "x",
  "1",
  "e\u0301",
];
const ID_CHARS = ["a", "b", "é", "Ω", "東", "😀", "\ue000", "1", "-"];
const CATEGORIES = ["red", "blue", "green", "Café", "york"];

/** A fixed dataset with every kind of input the builder treats differently. */
function goldenRecords(count: number, seed: number, textWords: number): SearchRecord[] {
  const rand = random(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const vocabulary = Array.from({ length: 300 }, () =>
    Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(SYLLABLES)).join(""),
  );
  // Skewed towards the first words, so that some posting runs are long and most are short.
  const word = () => vocabulary[Math.floor(rand() ** 3 * vocabulary.length)]!;
  const words = (min: number, spread: number) =>
    Array.from({ length: min + Math.floor(rand() * spread) }, word).join(" ");
  return Array.from({ length: count }, (_, i) => {
    // Some ids repeat (the last record of an id wins); many are not ASCII.
    const id =
      rand() < 0.08
        ? `dup-${i % 13}`
        : Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(ID_CHARS)).join("") + i;
    const data: Record<string, unknown> = { category: pick(CATEGORIES), text: words(1, textWords) };
    if (rand() < 0.7) data.price = Math.round(rand() * 10_000) / 100 - 10;
    if (rand() < 0.5) data.inStock = rand() < 0.5;
    if (rand() < 0.3) data.details = { rating: Math.floor(rand() * 5), tags: [pick(CATEGORIES), words(1, 2)] };
    // A few titles without a token.
    const record: SearchRecord = { id, title: rand() < 0.02 ? "—" : words(1, 5), data };
    if (rand() < 0.6) record.weight = Math.floor(rand() * 20);
    if (rand() < 0.4) {
      record.latitude = (rand() * 170 - 85).toFixed(6);
      record.longitude = (rand() * 360 - 180).toFixed(6);
    }
    return record;
  });
}

const sha256 = (file: string) => createHash("sha256").update(fs.readFileSync(file)).digest("hex");

// These change only with a deliberate change of the segment format: a refactoring that changes
// them has changed the bytes on disk (a section's content, name or write order, or the header).
const INDEX_SHA256 = "6d4c7c35a1fe937d44aa7cd856a11b1dde2cdb76da1e67f812b21ce609149768";
const RECORDS_SHA256 = "ab1bd04e1b9453dcd78bdca922547436c8f259545aff4f9e1a67fc6487c954c4";

describe("segment bytes", () => {
  it("are those of a fixed dataset, built in many posting windows", async () => {
    const dir = path.join(root, "golden");
    // 4 KiB windows hold 1,024 entries: every posting section below is filled in several.
    const builder = await SegmentBuilder.create(dir, 3, 4096);
    for (const record of goldenRecords(4000, 7, 8)) builder.add(record);
    const meta = await builder.finishFiles();
    expect(meta).toMatchObject({
      docCount: 3703,
      maxTitleTokens: 8,
      filterPaths: [],
      scalarsKept: true,
    });
    const { sections } = await openSegmentFile(path.join(dir, INDEX_FILE), false);
    for (const name of ["dataDocs", "fwdTokens", "termDocs", "prefixDocs"])
      expect(sections[name]!.length, name).toBeGreaterThan(4 * 1024);
    expect(sections.geoDocs!.length).toBeGreaterThan(1000);
    expect(sha256(path.join(dir, RECORDS_FILE))).toBe(RECORDS_SHA256);
    expect(sha256(path.join(dir, INDEX_FILE))).toBe(INDEX_SHA256);
  });
});
