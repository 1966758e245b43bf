// The final order of docs/ranking.md "Rank order" over hits from a segment and from a version's
// changes: bucket (typos, then lexical tier), then the sort field when a sort is given, else weight
// (when weighted), distance (records without coordinates last), the fine value (title equals the
// query, last token complete, prefix only), the title's length key (tokens, then characters),
// then id in code point order.
import type { SearchRecord } from "../../../ports/engine.ts";
import { compareCodePoints } from "../termdict/sorted-strings.ts";

/** A record's value for a sort: a number or a string; null (missing, or any other type) sorts last. */
export type SortValue = number | string | null;

export interface RankedHit {
  bucket: number;
  fine: number;
  weight: number;
  /** Infinity when the query has no point or the record no coordinates. */
  distance: number;
  /** columns/title-length.ts */
  lengthKey: number;
  id: string;
  record: SearchRecord;
  /** The segment document, for hits read from a segment (their records are fresh copies). */
  doc?: number;
  /** The sort field's value, when the request sorts. */
  sortValue?: SortValue;
}

/** The sort value of a field's value: only a finite number or a string counts. */
export function sortValueOf(value: unknown): SortValue {
  if (typeof value === "string") return value;
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** Numbers before strings in both directions, each ascending or descending; null last. */
export function compareSortValues(a: SortValue, b: SortValue, direction: "asc" | "desc"): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  const ta = typeof a === "number" ? 0 : 1;
  const tb = typeof b === "number" ? 0 : 1;
  if (ta !== tb) return ta - tb;
  const ascending = a < b ? -1 : 1;
  return direction === "asc" ? ascending : -ascending;
}

export function compareRanked(weighted: boolean, sort?: "asc" | "desc"): (a: RankedHit, b: RankedHit) => number {
  return (a, b) => {
    if (a.bucket !== b.bucket) return a.bucket - b.bucket;
    if (sort !== undefined) {
      const bySort = compareSortValues(a.sortValue ?? null, b.sortValue ?? null, sort);
      if (bySort !== 0) return bySort;
    } else if (weighted && a.weight !== b.weight) return b.weight - a.weight;
    if (a.distance !== b.distance) return a.distance < b.distance ? -1 : 1;
    if (a.fine !== b.fine) return a.fine - b.fine;
    if (a.lengthKey !== b.lengthKey) return a.lengthKey - b.lengthKey;
    return compareCodePoints(a.id, b.id);
  };
}
