// Facet semantics shared by the engine's parts (docs/api.md, Facets): which values of a field
// count, in which order values tie, and the top values of a set of counts.
import type { FacetResult, FacetValueCount, FilterValue } from "../ports/engine.ts";
import { isFilterValue, valuesAt } from "./filter.ts";

export type FacetValue = FilterValue;
export const isFacetValue = isFilterValue;

/** The distinct values a record counts for at a field: a scalar, or an array's distinct elements. */
export function facetValuesOf(actual: unknown): FacetValue[] {
  const values = valuesAt(actual);
  return values.length > 1 ? [...new Set(values)] : values;
}

const typeRank = (v: FacetValue) => (typeof v === "number" ? 0 : typeof v === "boolean" ? 1 : 2);

/** Numbers (ascending) before booleans (false first) before strings (by UTF-16 code units). */
export function compareFacetValues(a: FacetValue, b: FacetValue): number {
  const ta = typeRank(a);
  const tb = typeRank(b);
  if (ta !== tb) return ta - tb;
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/** Count descending, then value order. */
export function compareFacetCounts(a: FacetValueCount, b: FacetValueCount): number {
  return b.count - a.count || compareFacetValues(a.value, b.value);
}

/** Counts by value id of a dictionary whose ids are in value order (numbers first, ids [0, numberEnd)). */
export interface IdCounts {
  counts: Uint32Array;
  numberEnd: number;
  value(id: number): FacetValue;
}

/** Counts of values (and the numeric range) of one facet, merged from the parts of a version. */
export class FacetTally {
  readonly counts = new Map<FacetValue, number>();
  min = Infinity;
  max = -Infinity;
  /** Counts by id, kept apart so the top values are picked without decoding every value. */
  private byId: IdCounts | null = null;

  /** Adds counts by value id (one dictionary per tally). */
  addIds(counts: IdCounts): void {
    if (this.byId !== null) this.foldIds();
    this.byId = counts;
  }

  private foldIds(): void {
    const byId = this.byId!;
    this.byId = null;
    const { counts } = byId;
    for (let id = 0; id < counts.length; id++) if (counts[id]! > 0) this.add(byId.value(id), counts[id]!);
  }

  add(value: FacetValue, count = 1): void {
    this.counts.set(value, (this.counts.get(value) ?? 0) + count);
    if (typeof value === "number") {
      if (value < this.min) this.min = value;
      if (value > this.max) this.max = value;
    }
  }

  /** Counts the record's values at the field. */
  addRecord(actual: unknown): void {
    for (const v of facetValuesOf(actual)) this.add(v);
  }

  result(path: string[], maxValues: number): FacetResult {
    if (this.byId !== null) {
      if (this.counts.size > 0) this.foldIds();
      else return this.resultById(path, maxValues);
    }
    const values = [...this.counts].map(([value, count]) => ({ value, count }));
    values.sort(compareFacetCounts);
    const result: FacetResult = { path, values: values.slice(0, maxValues) };
    if (this.min <= this.max) result.stats = { min: this.min, max: this.max };
    return result;
  }

  /** The top values straight from counts by id: ids are in value order, so ties go to the smaller id. */
  private resultById(path: string[], maxValues: number): FacetResult {
    const { counts, numberEnd } = this.byId!;
    const top: number[] = [];
    let floor = 0;
    for (let id = 0; id < counts.length; id++) {
      const count = counts[id]!;
      if (count === 0 || (top.length === maxValues && count <= floor)) continue;
      let at = top.length;
      while (at > 0 && counts[top[at - 1]!]! < count) at--;
      top.splice(at, 0, id);
      if (top.length > maxValues) top.pop();
      if (top.length === maxValues) floor = counts[top[top.length - 1]!]!;
    }
    const result: FacetResult = {
      path,
      values: top.map((id) => ({ value: this.byId!.value(id), count: counts[id]! })),
    };
    let min = -1;
    let max = -1;
    for (let id = 0; id < numberEnd; id++)
      if (counts[id]! > 0) {
        min = id;
        break;
      }
    for (let id = numberEnd - 1; id >= 0; id--)
      if (counts[id]! > 0) {
        max = id;
        break;
      }
    if (min >= 0) result.stats = { min: this.byId!.value(min) as number, max: this.byId!.value(max) as number };
    return result;
  }
}
