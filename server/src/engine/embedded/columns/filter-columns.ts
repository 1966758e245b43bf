// Filter columns: each numeric or boolean data path (data.a.b) of a segment's records is a column
// of a kind and a number per document (sections.ts, filterColumnSections). compileFilter evaluates
// a FilterExpr against them (no record is read or parsed), with the semantics of
// src/search/filter.ts: a comparison holds only when the field exists with the type of the literal.
import type { FilterExpr } from "../../../ports/engine.ts";
import { compareValue } from "../../../search/filter.ts";
import type { Segment } from "../segment/segment.ts";

/** A document's kind of value at a filter column's path (its filter{i}Kind section). */
export const KIND_MISSING = 0;
export const KIND_NUMBER = 1;
export const KIND_FALSE = 2;
export const KIND_TRUE = 3;

export type DocPredicate = (doc: number) => boolean;

export function compileFilter(expr: FilterExpr, segment: Segment): DocPredicate {
  switch (expr.kind) {
    case "and": {
      const args = expr.args.map((a) => compileFilter(a, segment));
      return (doc) => args.every((f) => f(doc));
    }
    case "or": {
      const args = expr.args.map((a) => compileFilter(a, segment));
      return (doc) => args.some((f) => f(doc));
    }
    case "not": {
      const arg = compileFilter(expr.arg, segment);
      return (doc) => !arg(doc);
    }
    case "cmp": {
      const key = JSON.stringify(expr.path);
      const column = segment.meta.filterPaths.findIndex((p) => JSON.stringify(p) === key);
      if (column < 0) return () => false;
      const kinds = segment.filterKinds[column]!;
      const { op, value } = expr;
      if (typeof value === "boolean") {
        return (doc) => {
          const kind = kinds[doc]!;
          return (kind === KIND_TRUE || kind === KIND_FALSE) && compareValue(kind === KIND_TRUE, op, value);
        };
      }
      const nums = segment.filterNums[column]!;
      return (doc) => kinds[doc] === KIND_NUMBER && compareValue(nums[doc]!, op, value);
    }
  }
}
