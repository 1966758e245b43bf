// An immutable, self-contained major version: records on disk (records.bin, read per hit) and a
// typed-array index, mapped from index.bin (or read into memory where maps are unavailable). Documents are numbered in (weight desc, id asc) order, so a posting
// list read front to back is already in weighted rank order and a weighted top-k stops early.
//
// Every document has a position in three orders: the weight order (its number), the id order (its
// rank: rankToDoc/docToRank) and, when it has coordinates, the geo order (geoDocs, see geo.ts).
// Title posting lists are stored in all three, so a query reads its matches in whichever order
// ranks them (weight, id or distance) and stops after k instead of scoring every match.
//
// Layout of the sections (N documents, T terms, P prefixes, L = maxPrefix):
//   termBytes/termOffsets      sorted term dictionary (title and data tokens)
//   termPost (2T+1)            term t: docs whose first title token is t in termDocs[termPost[2t], termPost[2t+1]),
//                              docs with t elsewhere in the title in [termPost[2t+1], termPost[2t+2])
//   termRanks                  the same runs in id order (entries are id ranks)
//   termPostGeo/termGeo        the same runs in geo order (entries are geo positions; located docs only)
//   dataPost (T+1)/dataDocs    docs with t in a text field of data but not in the title
//   prefixBytes/prefixOffsets  sorted prefixes of 1..L characters of title terms
//   prefixPost, prefixRanks,   like the term runs, for "some title token starts with p"
//   prefixPostGeo, prefixGeo
//   fwdOffsets/fwdTokens       forward index: each doc's title term ids in title order
//   idBytes/idOffsets          ids in ascending order; rankToDoc/docToRank map id rank <-> doc
//   weight, lat, lon           per doc (weight 0 when absent, NaN coordinates when absent)
//   geoCodes/geoDocs           docs with coordinates in Z-order (see geo.ts)
//   recOffsets/recLengths      where each doc's JSON lies in records.bin
//   filter{i}Kind/filter{i}Num columns of the numeric/boolean data paths in meta.filterPaths
import fs from "node:fs";
import path from "node:path";
import type { SearchRecord } from "../../../ports/engine.ts";
import { openSegmentFile, type Section } from "./segment-file.ts";
import { SortedStrings } from "../termdict/sorted-strings.ts";
import type { GeoIndex } from "../columns/geo.ts";

export interface SegmentMeta {
  docCount: number;
  maxPrefix: number;
  maxTitleTokens: number;
  filterPaths: string[][];
}

/** filter{i}Kind values. */
export const KIND_MISSING = 0;
export const KIND_NUMBER = 1;
export const KIND_FALSE = 2;
export const KIND_TRUE = 3;

export const RECORDS_FILE = "records.bin";
/** JSON length (UTF-16 units) of the recently returned records kept per segment; see readHotRecord. */
const HOT_RECORD_UNITS = 4 * 1024 * 1024;
export const INDEX_FILE = "index.bin";

/** Freezes value and everything in it: the records readHotRecord hands out are shared. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

export class Segment {
  readonly dir: string;
  readonly meta: SegmentMeta;
  readonly terms: SortedStrings;
  readonly termPost: Uint32Array;
  readonly termDocs: Uint32Array;
  readonly termRanks: Uint32Array;
  readonly termPostGeo: Uint32Array;
  readonly termGeo: Uint32Array;
  readonly dataPost: Uint32Array;
  readonly dataDocs: Uint32Array;
  readonly prefixes: SortedStrings;
  readonly prefixPost: Uint32Array;
  readonly prefixDocs: Uint32Array;
  readonly prefixRanks: Uint32Array;
  readonly prefixPostGeo: Uint32Array;
  readonly prefixGeo: Uint32Array;
  readonly fwdOffsets: Uint32Array;
  readonly fwdTokens: Uint32Array;
  readonly ids: SortedStrings;
  readonly rankToDoc: Uint32Array;
  readonly docToRank: Uint32Array;
  readonly weight: Uint32Array;
  readonly geo: GeoIndex;
  readonly recOffsets: Float64Array;
  readonly recLengths: Uint32Array;
  readonly filterKinds: Uint8Array[];
  readonly filterNums: Float64Array[];
  /** Whether the index is a view of the mapped file rather than a copy in the heap. */
  readonly mapped: boolean;
  private fd: number;
  private readBuffer = Buffer.alloc(64 * 1024);
  private readonly hot = new Map<number, { record: SearchRecord; units: number }>();
  private hotUnits = 0;

  private constructor(dir: string, meta: SegmentMeta, sections: Record<string, Section>, mapped: boolean) {
    this.dir = dir;
    this.meta = meta;
    this.mapped = mapped;
    const u32 = (name: string) => sections[name] as Uint32Array;
    const f64 = (name: string) => sections[name] as Float64Array;
    const bytes = (name: string) => {
      const a = sections[name] as Uint8Array;
      return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    };
    this.terms = new SortedStrings(bytes("termBytes"), u32("termOffsets"));
    this.termPost = u32("termPost");
    this.termDocs = u32("termDocs");
    this.termRanks = u32("termRanks");
    this.termPostGeo = u32("termPostGeo");
    this.termGeo = u32("termGeo");
    this.dataPost = u32("dataPost");
    this.dataDocs = u32("dataDocs");
    this.prefixes = new SortedStrings(bytes("prefixBytes"), u32("prefixOffsets"));
    this.prefixPost = u32("prefixPost");
    this.prefixDocs = u32("prefixDocs");
    this.prefixRanks = u32("prefixRanks");
    this.prefixPostGeo = u32("prefixPostGeo");
    this.prefixGeo = u32("prefixGeo");
    this.fwdOffsets = u32("fwdOffsets");
    this.fwdTokens = u32("fwdTokens");
    this.ids = new SortedStrings(bytes("idBytes"), u32("idOffsets"));
    this.rankToDoc = u32("rankToDoc");
    this.docToRank = u32("docToRank");
    this.weight = u32("weight");
    this.geo = { codes: u32("geoCodes"), docs: u32("geoDocs"), lat: f64("lat"), lon: f64("lon") };
    this.recOffsets = f64("recOffsets");
    this.recLengths = u32("recLengths");
    this.filterKinds = meta.filterPaths.map((_, i) => sections[`filter${i}Kind`] as Uint8Array);
    this.filterNums = meta.filterPaths.map((_, i) => f64(`filter${i}Num`));
    this.fd = fs.openSync(path.join(dir, RECORDS_FILE), "r");
  }

  /** Opens the segment in `dir`; `map: false` reads the index into memory even where maps work. */
  static async load(dir: string, map = true): Promise<Segment> {
    const { meta, sections, mapped } = await openSegmentFile(path.join(dir, INDEX_FILE), map);
    return new Segment(dir, meta as SegmentMeta, sections, mapped);
  }

  get docCount(): number {
    return this.meta.docCount;
  }

  findDoc(id: string): number {
    const rank = this.ids.find(Buffer.from(id, "utf8"));
    return rank < 0 ? -1 : this.rankToDoc[rank]!;
  }

  /** Reads a record from disk, as the caller's own object; for scans (checkpoints), which must not churn the cache. */
  readRecord(doc: number): SearchRecord {
    return JSON.parse(this.readJson(doc)) as SearchRecord;
  }

  /**
   * Reads a record for a search hit or a lookup. Autocomplete traffic returns the same popular
   * records again and again, and each read is a system call plus a JSON parse (together about a
   * quarter of a search request's CPU under load), so recently returned records are kept, up to
   * HOT_RECORD_UNITS of JSON per segment. They are deeply frozen: every caller shares them.
   */
  readHotRecord(doc: number): SearchRecord {
    const cached = this.hot.get(doc);
    if (cached !== undefined) {
      // Most recently used last, so eviction (from the front) drops the least recently used.
      this.hot.delete(doc);
      this.hot.set(doc, cached);
      return cached.record;
    }
    const json = this.readJson(doc);
    const record = deepFreeze(JSON.parse(json) as SearchRecord);
    this.hot.set(doc, { record, units: json.length });
    this.hotUnits += json.length;
    for (const [old, entry] of this.hot) {
      if (this.hotUnits <= HOT_RECORD_UNITS) break;
      this.hot.delete(old);
      this.hotUnits -= entry.units;
    }
    return record;
  }

  private readJson(doc: number): string {
    const length = this.recLengths[doc]!;
    if (length > this.readBuffer.length) this.readBuffer = Buffer.alloc(length * 2);
    const read = fs.readSync(this.fd, this.readBuffer, 0, length, this.recOffsets[doc]!);
    if (read !== length) throw new Error(`${this.dir}: short read of record ${doc}`);
    return this.readBuffer.toString("utf8", 0, length);
  }

  close(): void {
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
  }
}
