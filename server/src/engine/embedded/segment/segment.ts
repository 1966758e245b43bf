// An immutable, self-contained major version: records on disk (records.bin, read per hit, see
// store/) and a typed-array index, mapped from index.bin (or read into memory where maps are
// unavailable). Documents are numbered in (weight desc, title length key asc, id asc) order, so a
// posting list read front to back is already in weighted rank order and a weighted top-k stops
// early.
//
// Title posting runs are stored in three orders of sections.ts (weight, length and geo), so a
// query reads its matches in whichever order ranks them and stops after k instead of scoring
// every match. Segments built before the length order existed number their documents by
// (weight desc, id asc) and store their runs in id order instead: for them lengthOrder is the id
// order, which their runs and numbering agree with (only the shorter-title tie-break is lost). The reader exposes each part under a name that says what it holds; sections.ts
// maps those to the sections stored in the file.
import path from "node:path";
import type { GeoIndex } from "../columns/geo.ts";
import { ValueColumn } from "../columns/value-columns.ts";
import { RecordStore } from "../store/record-store.ts";
import { SortedStrings } from "../termdict/sorted-strings.ts";
import { INDEX_FILE, type SegmentMeta } from "./meta.ts";
import {
  openSegmentFile,
  sectionOf,
  type ElementArrays,
  type ElementType,
  type Section,
  type SectionKey,
} from "./segment-file.ts";
import {
  PREFIX_POSTINGS,
  SECTIONS,
  TITLE_POSTINGS,
  filterColumnSections,
  valueColumnSections,
  type SplitPostingSections,
} from "./sections.ts";

/** The arrays of split posting runs, named as their sections (SplitPostingSections) are. */
export type SplitPostings = { readonly [K in keyof SplitPostingSections]: Uint32Array };

/** Documents with a term in data text but not in the title: term t's run is docs[offsets[t], offsets[t + 1]). */
export interface DataPostings {
  readonly offsets: Uint32Array;
  readonly docs: Uint32Array;
}

/** Each document's title term ids in title order: document d's are terms[offsets[d], offsets[d + 1]). */
export interface ForwardIndex {
  readonly offsets: Uint32Array;
  readonly terms: Uint32Array;
}

/** A permutation of the documents in both directions. */
export interface DocOrder {
  /** Per document: its position in the order. */
  readonly rankOf: Uint32Array;
  /** Per position: the document there. */
  readonly docAt: Uint32Array;
}

/** Typed views of an opened index file's sections, looked up through the section table. */
class SectionViews {
  private readonly sections: Record<string, Section>;

  constructor(sections: Record<string, Section>) {
    this.sections = sections;
  }

  has(key: SectionKey): boolean {
    return key.stored in this.sections;
  }

  get<T extends ElementType>(key: SectionKey<T>): ElementArrays[T] {
    return sectionOf(this.sections, key);
  }

  /** A string table from its bytes and offsets sections. */
  strings(bytes: SectionKey<"u8">, offsets: SectionKey<"u32">): SortedStrings {
    const a = this.get(bytes);
    return new SortedStrings(Buffer.from(a.buffer, a.byteOffset, a.byteLength), this.get(offsets));
  }

  split(group: SplitPostingSections): SplitPostings {
    return {
      offsets: this.get(group.offsets),
      docs: this.get(group.docs),
      ranks: this.get(group.ranks),
      geoOffsets: this.get(group.geoOffsets),
      geoPositions: this.get(group.geoPositions),
    };
  }
}

export class Segment {
  readonly dir: string;
  /** What the names of its files in `dir` start with: "" but for a layered major's base. */
  readonly prefix: string;
  readonly meta: SegmentMeta;
  /** The term dictionary: term ids are positions in it. */
  readonly terms: SortedStrings;
  readonly titlePostings: SplitPostings;
  readonly dataPostings: DataPostings;
  /** Prefixes of title terms (up to meta.maxPrefix characters): prefix ids are positions in it. */
  readonly prefixes: SortedStrings;
  readonly prefixPostings: SplitPostings;
  readonly forward: ForwardIndex;
  /** Ids in code point order: an id's position is its rank. */
  readonly ids: SortedStrings;
  readonly rankToDoc: Uint32Array;
  readonly docToRank: Uint32Array;
  /**
   * The length order (title length key asc, id asc: columns/title-length.ts), the order of the
   * split postings' ranks; the id order in a segment built before it (see lengthOrdered).
   */
  readonly lengthOrder: DocOrder;
  /**
   * Whether the segment has a length order of its own. False for segments built before it: their
   * lengthOrder is the id order, and equal weights are numbered by id, not by title length.
   */
  readonly lengthOrdered: boolean;
  readonly weight: Uint32Array;
  readonly geo: GeoIndex;
  /**
   * Per filter column (meta.filterPaths): each document's KIND_* and numeric value. Segments
   * built before D-200 only; later ones keep numbers and booleans in their value columns.
   */
  readonly filterKinds: Uint8Array[];
  readonly filterNums: Float64Array[];
  readonly records: RecordStore;
  /** Value columns by JSON of their path (meta.valuePaths); null in segments built before them. */
  private readonly valueColumns: Map<string, ValueColumn> | null;
  /** Paths (JSON) of value columns that keep only presence (meta.valueOverflow). */
  private readonly overflowPaths: Set<string>;
  /** Whether the index is a view of the mapped file rather than a copy in the heap. */
  readonly mapped: boolean;

  private constructor(dir: string, prefix: string, meta: SegmentMeta, sections: SectionViews, mapped: boolean) {
    this.dir = dir;
    this.prefix = prefix;
    this.meta = meta;
    this.mapped = mapped;
    this.terms = sections.strings(SECTIONS.termDictBytes, SECTIONS.termDictOffsets);
    this.titlePostings = sections.split(TITLE_POSTINGS);
    this.dataPostings = { offsets: sections.get(SECTIONS.dataOffsets), docs: sections.get(SECTIONS.dataDocs) };
    this.prefixes = sections.strings(SECTIONS.prefixDictBytes, SECTIONS.prefixDictOffsets);
    this.prefixPostings = sections.split(PREFIX_POSTINGS);
    this.forward = { offsets: sections.get(SECTIONS.forwardOffsets), terms: sections.get(SECTIONS.forwardTerms) };
    this.ids = sections.strings(SECTIONS.idBytes, SECTIONS.idOffsets);
    this.rankToDoc = sections.get(SECTIONS.rankToDoc);
    this.docToRank = sections.get(SECTIONS.docToRank);
    this.lengthOrdered = sections.has(SECTIONS.docToLengthRank);
    this.lengthOrder = this.lengthOrdered
      ? { rankOf: sections.get(SECTIONS.docToLengthRank), docAt: sections.get(SECTIONS.lengthRankToDoc) }
      : { rankOf: this.docToRank, docAt: this.rankToDoc };
    this.weight = sections.get(SECTIONS.weight);
    this.geo = {
      codes: sections.get(SECTIONS.geoCodes),
      docs: sections.get(SECTIONS.geoDocs),
      lat: sections.get(SECTIONS.latitude),
      lon: sections.get(SECTIONS.longitude),
    };
    const filters = meta.filterPaths.map((_, i) => filterColumnSections(i));
    this.filterKinds = filters.map((column) => sections.get(column.kinds));
    this.filterNums = filters.map((column) => sections.get(column.values));
    this.records = new RecordStore(
      dir,
      sections.get(SECTIONS.recordOffsets),
      sections.get(SECTIONS.recordLengths),
      prefix,
    );
    this.valueColumns = meta.valuePaths === undefined ? null : new Map();
    this.overflowPaths = new Set((meta.valueOverflow ?? []).map((i) => JSON.stringify(meta.valuePaths![i])));
    meta.valuePaths?.forEach((p, i) => {
      const column = new ValueColumn(valueColumnSections(i), (key) => sections.get(key));
      this.valueColumns!.set(JSON.stringify(p), column);
    });
  }

  /**
   * The value column of a data path: "none" when no record has the path, "unindexed" when the
   * segment has no value columns (built before them) or keeps only the path's presence (then
   * `presence` is set) and, in segments with meta.scalarsKept, its numbers and booleans (then
   * `scalars` is the column, whose dictionary lacks the strings); callers read the records for
   * what the column lacks.
   */
  valueColumn(
    path: readonly string[],
  ):
    | { kind: "column"; column: ValueColumn }
    | { kind: "none" }
    | { kind: "unindexed"; presence?: Uint8Array; scalars?: ValueColumn } {
    if (this.valueColumns === null) return { kind: "unindexed" };
    const key = JSON.stringify(path);
    const column = this.valueColumns.get(key);
    if (column === undefined) return { kind: "none" };
    if (this.overflowPaths.has(key)) {
      return this.meta.scalarsKept
        ? { kind: "unindexed", presence: column.present, scalars: column }
        : { kind: "unindexed", presence: column.present };
    }
    return { kind: "column", column };
  }

  /**
   * Opens the segment in `dir`; `map: false` reads the index into memory even where maps work.
   * `prefix`: what its files' names start with (a layered major's base, versions/layers.ts).
   */
  static async load(dir: string, map = true, prefix = ""): Promise<Segment> {
    const { meta, sections, mapped } = await openSegmentFile(path.join(dir, prefix + INDEX_FILE), map);
    return new Segment(dir, prefix, meta as SegmentMeta, new SectionViews(sections), mapped);
  }

  /**
   * Only the records of the segment in `dir`, for a scan of all of them (a checkpoint's copy): the
   * two sections that locate them are read into the heap and the index is not opened at all.
   */
  static async openRecords(dir: string, prefix = ""): Promise<{ docCount: number; records: RecordStore }> {
    const wanted = [SECTIONS.recordOffsets.stored, SECTIONS.recordLengths.stored];
    const { meta, sections } = await openSegmentFile(path.join(dir, prefix + INDEX_FILE), false, wanted);
    const records = new RecordStore(
      dir,
      sectionOf(sections, SECTIONS.recordOffsets),
      sectionOf(sections, SECTIONS.recordLengths),
      prefix,
    );
    return { docCount: (meta as SegmentMeta).docCount, records };
  }

  get docCount(): number {
    return this.meta.docCount;
  }

  findDoc(id: string): number {
    const rank = this.ids.find(Buffer.from(id, "utf8"));
    return rank < 0 ? -1 : this.rankToDoc[rank]!;
  }

  close(): void {
    this.records.close();
  }
}
