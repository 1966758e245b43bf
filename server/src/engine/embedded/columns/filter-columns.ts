// Evaluates a FilterExpr against a segment's columns (no record is read or parsed), with the
// semantics of search/filter.ts: a comparison holds only when the field exists with the type of
// the literal.
import type { FilterExpr } from "../../../ports/engine.ts";
import { compareValue } from "../../../search/filter.ts";
import { KIND_FALSE, KIND_NUMBER, KIND_TRUE, type Segment } from "../segment/segment.ts";

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
