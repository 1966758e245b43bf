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

/** Counts of values (and the numeric range) of one facet, merged from the parts of a version. */
export class FacetTally {
  readonly counts = new Map<FacetValue, number>();
  min = Infinity;
  max = -Infinity;

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
    const values = [...this.counts].map(([value, count]) => ({ value, count }));
    values.sort(compareFacetCounts);
    const result: FacetResult = { path, values: values.slice(0, maxValues) };
    if (this.min <= this.max) result.stats = { min: this.min, max: this.max };
    return result;
  }
}
