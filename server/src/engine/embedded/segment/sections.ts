// The table of a segment's sections: for each, the name stored in index.bin's header, its element
// type and the part of the engine that writes it. The writers (build/ drives them) and the Segment
// reader both name sections through this table, so no stored name or element type is spelled
// twice. In code a section is named for what it holds; the stored names are part of the format
// (docs/engine.md) and must not change, nor the order the builder writes them in (listed here in
// that order): either would change the bytes of every segment.
//
// Every document has a position in four orders: the weight order (its document number, from
// weight desc, title length key asc, id asc), the id order (its id rank), the length order (its
// length rank, from title length key asc, id asc; columns/title-length.ts) and, when it has
// coordinates, the geo order (see columns/geo.ts). N documents, T terms, P prefixes.
import type { ElementType, SectionKey } from "./segment-file.ts";

/** The folder of the writer, which is the part of the segment a section belongs to. */
export type Part = "columns" | "store" | "postings" | "termdict";

export interface SectionSpec<T extends ElementType = ElementType> extends SectionKey<T> {
  readonly part: Part;
}

function section<T extends ElementType>(stored: string, type: T, part: Part): SectionSpec<T> {
  return { stored, type, part };
}

/** The sections that are one per segment (filter columns and split postings are below). */
export const SECTIONS = {
  /** Ids in ascending code point order, as UTF-8; a sorted string table with idOffsets. */
  idBytes: section("idBytes", "u8", "columns"),
  idOffsets: section("idOffsets", "u32", "columns"),
  /** Per document (0 when absent). */
  weight: section("weight", "u32", "columns"),
  /** Per document: its id rank. */
  docToRank: section("docToRank", "u32", "columns"),
  /** Per id rank: its document. */
  rankToDoc: section("rankToDoc", "u32", "columns"),
  /**
   * Per document: its length rank. Absent from segments built before the length order, whose
   * split postings' ranks are id ranks (segment.ts then uses the id order in its place).
   */
  docToLengthRank: section("docToLenRank", "u32", "columns"),
  /** Per length rank: its document. Absent with docToLenRank. */
  lengthRankToDoc: section("lenRankToDoc", "u32", "columns"),
  /** Per document, NaN without coordinates. */
  latitude: section("lat", "f64", "columns"),
  longitude: section("lon", "f64", "columns"),
  /** Per geo position: the Z-order code of the document there, ascending. */
  geoCodes: section("geoCodes", "u32", "columns"),
  /** Per geo position: its document (the documents with coordinates). */
  geoDocs: section("geoDocs", "u32", "columns"),
  /** Per document: where its JSON starts in records.bin (a byte offset, past 4 GiB too). */
  recordOffsets: section("recOffsets", "f64", "store"),
  recordLengths: section("recLengths", "u32", "store"),
  /** T+1 entries: term t's run in dataDocs is [dataOffsets[t], dataOffsets[t + 1]). */
  dataOffsets: section("dataPost", "u32", "postings"),
  /** Documents with a term in a text field of data but not in the title, ascending per term. */
  dataDocs: section("dataDocs", "u32", "postings"),
  // filter{i}Kind, filter{i}Num: filterColumnSections(i).
  // value{i}Has, value{i}Offsets, …: valueColumnSections(i) (segments built before them have none).
  /** N+1 entries: document d's title terms are forwardTerms[forwardOffsets[d], forwardOffsets[d + 1]). */
  forwardOffsets: section("fwdOffsets", "u32", "postings"),
  /** Each document's title term ids, in title order (the forward index). */
  forwardTerms: section("fwdTokens", "u32", "postings"),
  // termPost… : TITLE_POSTINGS.
  /** Prefixes of 1..maxPrefix characters of title terms: a sorted string table (P entries). */
  prefixDictBytes: section("prefixBytes", "u8", "termdict"),
  prefixDictOffsets: section("prefixOffsets", "u32", "termdict"),
  // prefixPost… : PREFIX_POSTINGS.
  /** Title and data terms: a sorted string table (T entries); term ids are positions in it. */
  termDictBytes: section("termBytes", "u8", "termdict"),
  termDictOffsets: section("termOffsets", "u32", "termdict"),
} as const;

/**
 * Posting runs split by where the key occurs in the title: key k has a run of the documents whose
 * first title token has it and a run of those where a later token has it, each stored in three
 * orders: weight, length and geo (the geo order holding only documents with coordinates). A
 * document with the key at the start and later too is in both runs; in segments built before
 * SegmentMeta.laterRuns it is in the start run only.
 */
export interface SplitPostingSections {
  /** 2K+1 entries: key k's runs in docs and ranks are [offsets[2k], offsets[2k+1]) and [offsets[2k+1], offsets[2k+2]). */
  readonly offsets: SectionSpec<"u32">;
  /** The runs in weight order: entries are document numbers. */
  readonly docs: SectionSpec<"u32">;
  /**
   * The same runs in length order: entries are length ranks (id ranks in segments built before
   * the length order, which have no docToLenRank section).
   */
  readonly ranks: SectionSpec<"u32">;
  /** Like offsets, into geoPositions. */
  readonly geoOffsets: SectionSpec<"u32">;
  /** The runs' documents with coordinates in geo order: entries are geo positions. */
  readonly geoPositions: SectionSpec<"u32">;
}

/** "Some title token is term t". */
export const TITLE_POSTINGS: SplitPostingSections = {
  offsets: section("termPost", "u32", "postings"),
  docs: section("termDocs", "u32", "postings"),
  ranks: section("termRanks", "u32", "postings"),
  geoOffsets: section("termPostGeo", "u32", "postings"),
  geoPositions: section("termGeo", "u32", "postings"),
};

/** "Some title token starts with prefix p" (prefixes of at most maxPrefix characters). */
export const PREFIX_POSTINGS: SplitPostingSections = {
  offsets: section("prefixPost", "u32", "postings"),
  docs: section("prefixDocs", "u32", "postings"),
  ranks: section("prefixRanks", "u32", "postings"),
  geoOffsets: section("prefixPostGeo", "u32", "postings"),
  geoPositions: section("prefixGeo", "u32", "postings"),
};

export interface FilterColumnSections {
  /** Per document: KIND_* of the value at the column's path (columns/filter-columns.ts). */
  readonly kinds: SectionSpec<"u8">;
  /** Per document: the value when it is a number, else 0. */
  readonly values: SectionSpec<"f64">;
}

/** The sections of filter column i, the data path meta.filterPaths[i]. */
export function filterColumnSections(column: number): FilterColumnSections {
  return {
    kinds: section(`filter${column}Kind`, "u8", "columns"),
    values: section(`filter${column}Num`, "f64", "columns"),
  };
}

/**
 * Value column i, the data path meta.valuePaths[i] (columns/value-columns.ts): every value at the
 * path (a scalar, or an array's elements) as ids into the column's dictionary, which lists the
 * distinct values in facet order (numbers ascending, false, true, strings by UTF-16 code units).
 */
export interface ValueColumnSections {
  /** Per document: 0 when the path is missing or null, 2 when it holds an array, else 1. */
  readonly present: SectionSpec<"u8">;
  /** N+1 entries when some document has several values (ids[offsets[d], offsets[d+1])); empty when each has at most one. */
  readonly offsets: SectionSpec<"u32">;
  /** Value ids: per document (0xffffffff for none) when offsets is empty, else the runs, ascending. */
  readonly ids: SectionSpec<"u32">;
  /** The dictionary's numbers, ascending: ids [0, numbers.length). */
  readonly numbers: SectionSpec<"f64">;
  /** Its booleans (0 false, 1 true), ascending: the next ids. */
  readonly booleans: SectionSpec<"u8">;
  /** Its strings by UTF-16 code units, as UTF-8 (stringOffsets: count + 1 entries): the last ids. */
  readonly stringBytes: SectionSpec<"u8">;
  readonly stringOffsets: SectionSpec<"u32">;
  /** Size + 1 entries: value id v's documents are postingDocs[postingOffsets[v], postingOffsets[v + 1]). */
  readonly postingOffsets: SectionSpec<"u32">;
  /** The documents of each value, ascending (what a filter on = or IN starts from when it is selective). */
  readonly postingDocs: SectionSpec<"u32">;
}

export function valueColumnSections(column: number): ValueColumnSections {
  return {
    present: section(`value${column}Has`, "u8", "columns"),
    offsets: section(`value${column}Offsets`, "u32", "columns"),
    ids: section(`value${column}Ids`, "u32", "columns"),
    numbers: section(`value${column}Nums`, "f64", "columns"),
    booleans: section(`value${column}Bools`, "u8", "columns"),
    stringBytes: section(`value${column}StrBytes`, "u8", "columns"),
    stringOffsets: section(`value${column}StrOffsets`, "u32", "columns"),
    postingOffsets: section(`value${column}PostOffsets`, "u32", "columns"),
    postingDocs: section(`value${column}PostDocs`, "u32", "columns"),
  };
}
