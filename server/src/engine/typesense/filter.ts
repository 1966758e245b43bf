// FilterExpr -> filter_by, with the semantics of search/filter.ts: a comparison (`!=` too)
// holds only when the field is present with the literal's type, and `!` negates. Typesense's
// `!=` is the complement of `=` (a document without the field passes), and it has no general
// NOT and no "field missing" test; so negations are pushed down to the comparisons, and
// presence is read from the `fpresent` tokens each document carries.
import type { FilterComparison, FilterExpr } from "../../ports/engine.ts";
import { filterField, presenceToken, type FieldKind } from "./names.ts";

/** `true`: no constraint. `false`: nothing can match. A string: a filter_by expression. */
export type Clause = string | boolean;

const NEGATED: Record<FilterComparison, FilterComparison> = {
  "=": "!=",
  "!=": "=",
  "<": ">=",
  "<=": ">",
  ">": "<=",
  ">=": "<",
};

const holds = (a: number, op: FilterComparison, b: number): boolean =>
  op === "="
    ? a === b
    : op === "!="
      ? a !== b
      : op === "<"
        ? a < b
        : op === "<="
          ? a <= b
          : op === ">"
            ? a > b
            : a >= b;

function combine(kind: "and" | "or", clauses: Clause[]): Clause {
  const absorbing = kind === "or";
  if (clauses.includes(absorbing)) return absorbing;
  const parts = clauses.filter((c): c is string => typeof c === "string");
  if (parts.length === 0) return !absorbing;
  if (parts.length === 1) return parts[0]!;
  return `(${parts.join(kind === "and" ? " && " : " || ")})`;
}

const present = (field: string): string => `fpresent:=[${presenceToken(field)}]`;
const missing = (field: string): string => `fpresent:!=[${presenceToken(field)}]`;

/** A comparison, to hold (negated=false) or to fail (negated=true). */
function comparison(
  field: string,
  kind: FieldKind,
  op: FilterComparison,
  value: number | boolean,
  negated: boolean,
  exists: boolean,
): Clause {
  if (!exists) return negated;

  if (kind === "bool") {
    // Booleans order as false < true; the values of a bool field satisfying the comparison
    // form a set, which Typesense can test by equality or presence.
    const satisfying = [false, true].filter((b) => holds(Number(b), op, Number(value)));
    if (satisfying.length === 0) return negated;
    if (satisfying.length === 2) return negated ? missing(field) : present(field);
    return `${field}:${negated ? "!=" : "="}${String(satisfying[0])}`;
  }

  const literal = String(value);
  if (!negated) return op === "!=" ? `(${field}:!=${literal} && ${present(field)})` : `${field}:${op}${literal}`;
  if (op === "=") return `${field}:!=${literal}`;
  return `(${field}:${NEGATED[op]}${literal} || ${missing(field)})`;
}

function translate(expr: FilterExpr, negated: boolean, hasField: (field: string) => boolean): Clause {
  switch (expr.kind) {
    case "not":
      return translate(expr.arg, !negated, hasField);
    case "and":
    case "or": {
      const kind = negated ? (expr.kind === "and" ? "or" : "and") : expr.kind;
      return combine(
        kind,
        expr.args.map((arg) => translate(arg, negated, hasField)),
      );
    }
    case "cmp": {
      const kind: FieldKind = typeof expr.value === "boolean" ? "bool" : "num";
      const field = filterField(kind, expr.path);
      return comparison(field, kind, expr.op, expr.value, negated, hasField(field));
    }
  }
}

/** `hasField` says whether the collection's schema knows a flattened field (it only learns a
 * field once some document has it, and filtering on an unknown field is an error). */
export function translateFilter(expr: FilterExpr, hasField: (field: string) => boolean): Clause {
  return translate(expr, false, hasField);
}

/** Flattened fields an expression refers to, to check them against the schema first. */
export function referencedFields(expr: FilterExpr): string[] {
  switch (expr.kind) {
    case "not":
      return referencedFields(expr.arg);
    case "and":
    case "or":
      return expr.args.flatMap(referencedFields);
    case "cmp":
      return [filterField(typeof expr.value === "boolean" ? "bool" : "num", expr.path)];
  }
}

export const allOf = (...clauses: Clause[]): Clause => combine("and", clauses);
