// What a segment directory holds, and the header's meta: one immutable major version, its records
// in records.bin (the store, read per hit) and its index in index.bin (the sections of sections.ts
// in the container of segment-file.ts).

export const INDEX_FILE = "index.bin";
export const RECORDS_FILE = "records.bin";

/** Stored as JSON in index.bin's header: keep the keys and their order (the bytes of the file). */
export interface SegmentMeta {
  docCount: number;
  /** Longest prefix (in characters) with its own posting runs. */
  maxPrefix: number;
  /** The most title tokens of one document (the size of the matching scratch). */
  maxTitleTokens: number;
  /**
   * The data path of each filter column (a number or boolean per document), in column order.
   * Empty in segments built with scalarsKept: their value columns hold numbers and booleans.
   */
  filterPaths: string[][];
  /**
   * True when a split posting's later run holds every document with the key at a later title
   * token, also those that have it first (sections.ts); absent in segments built before.
   */
  laterRuns?: boolean;
  /**
   * The data path of each value column (columns/value-columns.ts), in column order: every path
   * some record reaches through objects. Absent in segments built before value columns.
   */
  valuePaths?: string[][];
  /**
   * Value columns whose values were not kept (too many distinct strings for the build's memory):
   * only their presence is, and with scalarsKept their numbers and booleans; filters and facets
   * on them read the records for the rest.
   */
  valueOverflow?: number[];
  /**
   * True when every number and boolean is in the value columns, overflowed ones included, and no
   * filter columns are written (D-200); absent in segments built before.
   */
  scalarsKept?: boolean;
}
