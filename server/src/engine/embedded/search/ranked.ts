// The final order of docs/ranking.md "Rank order" over hits from a segment and from a version's
// changes: bucket (typos, then lexical tier), weight (when weighted), distance (records without
// coordinates last), the fine value (title equals the query, last token complete, prefix only),
// the title's length key (tokens, then characters), then id in code point order.
import type { SearchRecord } from "../../../ports/engine.ts";
import { compareCodePoints } from "../termdict/sorted-strings.ts";

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
}

export function compareRanked(weighted: boolean): (a: RankedHit, b: RankedHit) => number {
  return (a, b) => {
    if (a.bucket !== b.bucket) return a.bucket - b.bucket;
    if (weighted && a.weight !== b.weight) return b.weight - a.weight;
    if (a.distance !== b.distance) return a.distance < b.distance ? -1 : 1;
    if (a.fine !== b.fine) return a.fine - b.fine;
    if (a.lengthKey !== b.lengthKey) return a.lengthKey - b.lengthKey;
    return compareCodePoints(a.id, b.id);
  };
}
